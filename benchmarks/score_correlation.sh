#!/bin/bash
# The fidelity table (issues 5, 15 and 20): the LLM judges against execution next to chrF and the shipped CodeBLEU,
# CodeBERTScore and GPT-3.5 ICE-Score columns, on the stratified samples of the bundled ICE-Score set
# (`--select stratified --limit $LIMIT`: 100 = 50 tasks x one pass + one fail; 276 = all 138 tasks with both outcomes).
#
# Per model of $MODELS, one run folder per judge variant (every folder resumes, all share the response cache):
#   sampled           ice-score, dsa-cqe-simplified, dsa-cqe; the written score (--score-mode sampled)
#   expected          the same three; the probability-weighted score (G-Eval expectation, --score-mode expected),
#                     and as METHOD/written the score written in those same answers (scores.jsonl's score_sampled)
#   final-p-correct   dsa-cqe-simplified, dsa-cqe with --final-step p-correct (P(Yes) after the comparison)
#   p-correct[-noref][-analyse]   the P(Yes) judge with/without the reference, one step / --analyse-first
# then one joined table (benchmarks/join_scores.py) and `workbench correlate` against our own execution
# (RESULTS: results.jsonl of `workbench execute humaneval-codex-python --prompt-column prompt --completion-column completion_multipl_e`).
#
# With a filled response cache (CACHE) it is all cache hits. From an empty one, qwen2.5-coder-1.5b on 100 samples is
# many CPU hours on 2 cores (dsa-cqe dominates); run it in the background, it resumes where it stopped.
#   MODELS    litellm models, space-separated (default: local/qwen2.5-coder-0.5b local/qwen2.5-coder-1.5b)
#   API_BASE  endpoint of an OpenAI-compatible server for openai/<name> models (`workbench models serve`, vLLM ...;
#             export OPENAI_API_KEY=<its key>)
#   LIMIT     stratified samples (default 100); JUDGES  variants to run (default: all of them)
#   RUNS      folder of the run folders (default runs/); CACHE  response cache (default issue5-cache)
#   SCORE_ARGS  more `workbench score` options for every run (e.g. "--max-tokens 192 --max-subcodes 4")
# Smoke test: MODELS=local/smollm2-135m LIMIT=6 RUNS=smoke RESULTS=... benchmarks/score_correlation.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "${RUNS:-runs}" && cd "${RUNS:-runs}"
W="${WORKBENCH:-workbench}"
MODELS="${MODELS:-local/qwen2.5-coder-0.5b local/qwen2.5-coder-1.5b}"
LIMIT="${LIMIT:-100}"
JUDGES="${JUDGES:-sampled expected final-p-correct p-correct p-correct-noref p-correct-analyse p-correct-noref-analyse}"
CACHE="${CACHE:-issue5-cache}"
RESULTS="${RESULTS:?path of workbench execute results.jsonl for the 3,220 samples}"
SHIPPED=(codebleu codebertscore_f1 codebertscore_f3 gpt35_nswr gpt35_nsnr)
CARRY=(--carry passed --carry completion_multipl_e); for column in "${SHIPPED[@]}"; do CARRY+=(--carry "$column"); done
ROWS=(humaneval-codex-python --generation-column completion_multipl_e --limit "$LIMIT" --select stratified "${CARRY[@]}")

score() {  # score FOLDER [workbench score options]: one variant, resumed, timed
  local folder=$1; shift
  local started=$SECONDS
  # shellcheck disable=SC2086  # SCORE_ARGS holds several options
  $W score "${ROWS[@]}" --cache-dir "$CACHE" -o "$folder" --resume --timeout 300 --no-progress ${SCORE_ARGS:-} "$@"
  echo "$folder: $((SECONDS - started)) s" >&2
}

# chrF needs no model
score "chrf-$LIMIT" -m chrf
JOIN=("chrf=chrf-$LIMIT:chrf")
for column in "${SHIPPED[@]}"; do JOIN+=("$column=chrf-$LIMIT:$column"); done

for MODEL in $MODELS; do
  tag="$(basename "$MODEL")-$LIMIT"
  MODEL_ARGS=(--model "$MODEL"); [ -n "${API_BASE:-}" ] && MODEL_ARGS+=(--api-base "$API_BASE")
  short="$(basename "$MODEL" | sed 's/qwen2.5-coder-/q/')"
  for judge in $JUDGES; do
    case "$judge" in
      sampled|expected)
        score "$tag/$judge" "${MODEL_ARGS[@]}" -m ice-score -m dsa-cqe-simplified -m dsa-cqe --score-mode "$judge"
        for method in ice-score dsa-cqe-simplified dsa-cqe; do
          JOIN+=("$method/$judge/$short=$tag/$judge:$method")
          # the score written in the same answers, read without the token probabilities
          if [ "$judge" = expected ]; then JOIN+=("$method/written/$short=$tag/$judge:$method:score_sampled"); fi
        done ;;
      final-p-correct)
        score "$tag/$judge" "${MODEL_ARGS[@]}" -m dsa-cqe-simplified -m dsa-cqe --final-step p-correct
        for method in dsa-cqe-simplified dsa-cqe; do JOIN+=("$method/p-correct/$short=$tag/$judge:$method"); done ;;
      p-correct|p-correct-noref|p-correct-analyse|p-correct-noref-analyse)
        flags=()
        [[ "$judge" == *noref* ]] && flags+=(--no-reference)
        [[ "$judge" == *analyse* ]] && flags+=(--analyse-first)
        score "$tag/$judge" "${MODEL_ARGS[@]}" -m p-correct "${flags[@]}"
        JOIN+=("$judge/$short=$tag/$judge:p-correct") ;;
      *) echo "unknown judge variant $judge" >&2; exit 2 ;;
    esac
  done
done

python "$HERE/join_scores.py" "fidelity-$LIMIT.jsonl" "${JOIN[@]}"
METRICS=(); COMBINE=()
for spec in "${JOIN[@]}"; do
  name="${spec%%=*}"; METRICS+=(-m "$name")
  # issue 20's combination, declared before the data: equal-weight rank mean of P(Yes) and CodeBLEU
  [[ "$name" == p-correct/* ]] && COMBINE+=(--combine "$name+codebleu=rank-mean:$name,codebleu")
done
$W correlate "fidelity-$LIMIT.jsonl" "${METRICS[@]}" --results "$RESULTS" --length-column completion_multipl_e \
  --baseline codebleu --baseline chrf "${COMBINE[@]}" \
  --json "fidelity-$LIMIT.correlate.json" --plot "fidelity-$LIMIT.correlate.png"
python "$HERE/fidelity_table.py" "fidelity-$LIMIT.correlate.json" > "fidelity-$LIMIT.md"
echo "table: $PWD/fidelity-$LIMIT.md" >&2
