#!/bin/bash
# The stratified-100 fidelity table with the full-DSA-CQE cells of this folder joined onto the committed table of
# session 18 (whose run folders are gone): join, correlate against our own execution, Markdown.
#   BENCH=/path/to/repo/benchmarks bash table.sh OUT_PREFIX   (inside a copy of this folder, a workbench venv active)
# Needs RESULTS (default exec-codex.jsonl): `workbench execute humaneval-codex-python --prompt-column prompt
#   --completion-column completion_multipl_e -o exec-codex.jsonl` (about 85 s on 2 cores).
set -euo pipefail
OUT=${1:?output prefix, e.g. fidelity_session20_100}
HERE="$(cd "$(dirname "$0")" && pwd)"
BENCH="$(cd "${BENCH:-$HERE/../..}" && pwd)"  # the benchmarks/ folder; set BENCH when running a copy
RESULTS=${RESULTS:-exec-codex.jsonl}
BASE="$BENCH/results/fidelity_session18_100.scores.jsonl"
JOIN=()
for model in 1.5b 0.5b; do
  [ -s "q$model/dsa-cqe-expected/scores.jsonl" ] && JOIN+=(
    "dsa-cqe/expected/q$model=q$model/dsa-cqe-expected:dsa-cqe"
    "dsa-cqe/written/q$model=q$model/dsa-cqe-expected:dsa-cqe:score_sampled")
  [ -s "q$model/dsa-cqe-final-p-correct/scores.jsonl" ] && JOIN+=(
    "dsa-cqe/p-correct/q$model=q$model/dsa-cqe-final-p-correct:dsa-cqe")
done
python "$BENCH/join_scores.py" --base "$BASE" "$OUT.scores.jsonl" "${JOIN[@]}"
# every numeric column except the labels and correlate's bookkeeping columns is a metric
mapfile -t METRICS < <(python "$HERE/metric_columns.py" "$OUT.scores.jsonl")
ARGS=()
for name in "${METRICS[@]}"; do ARGS+=(-m "$name"); done
# issue 20's combinations, declared before the data: equal-weight rank mean of each P(Yes) judge and CodeBLEU
for name in "${METRICS[@]}"; do
  case "$name" in p-correct/q1.5b|dsa-cqe/p-correct/q1.5b) ARGS+=(--combine "$name+codebleu=rank-mean:$name,codebleu");; esac
done
workbench correlate "$OUT.scores.jsonl" "${ARGS[@]}" --results "$RESULTS" --length-column completion_multipl_e \
  --baseline codebleu --baseline chrf --json "$OUT.correlate.json"
python "$BENCH/fidelity_table.py" "$OUT.correlate.json" > "$OUT.md"
echo "table: $PWD/$OUT.md" >&2
