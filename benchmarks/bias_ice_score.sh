#!/bin/bash
# Duplication and contamination bias on the bundled ICE-Score set (issue 18): 3,220 Codex generations for 161
# HumanEval tasks (20 each) with the authors' pass/fail and shipped metric / judge columns.
#
#   1. in-set near-duplicates within each task (`--group-column task_id`), decontaminated against HumanEval
#      (prompt + canonical solution), with the default --min-tokens 20 (what configs/humaneval.toml runs) and
#      with --min-tokens 5 (2,032 of the 3,220 completions have fewer than 20 identifier/literal tokens);
#   2. decontamination of the whole program (prompt + completion) against HumanEval's prompt + canonical solution;
#   3. `workbench bias`: pass@1 (`passed`) and every shipped metric, all rows vs one per cluster (Eq. 2 of
#      Allamanis 2019), clean vs contaminated rows and tasks, each metric's Kendall tau-b with `passed`;
#   4. `workbench correlate --dedup`: every coefficient, pooled and per problem, on one row per cluster.
#
# Writes benchmarks/results/bias_ice_score_*.json and the printed tables to bias_ice_score.txt.
# Usage (from the repository root): benchmarks/bias_ice_score.sh   [OUT=/tmp/bias-ice] [WORKBENCH="python -m workbench"]
set -euo pipefail
OUT="${OUT:-/tmp/bias-ice}"
W="${WORKBENCH:-workbench}"
RESULTS=benchmarks/results
mkdir -p "$OUT" "$RESULTS"
METRICS="-m passed -m codebleu -m chrf -m bleu -m codebertscore_f1 -m codebertscore_f3 -m gpt35_nswr -m gpt35_nsnr"
IDS="--id-column task_id,sample_id"
{
for TOKENS in 20 5; do
  $W dedup humaneval-codex-python --code-column completion_multipl_e $IDS --group-column task_id \
      --against humaneval --min-tokens "$TOKENS" --no-progress --json -o "$OUT/dedup-min$TOKENS" > "$OUT/dedup-min$TOKENS.json"
  echo "## in-set dedup within tasks + against humaneval, --min-tokens $TOKENS"
  echo "\$ workbench bias $OUT/dedup-min$TOKENS humaneval-codex-python $METRICS $IDS --task-column task_id --label passed"
  $W bias "$OUT/dedup-min$TOKENS" humaneval-codex-python $METRICS $IDS --task-column task_id --label passed \
      --json "$RESULTS/bias_ice_score_min$TOKENS.json" --plot "$RESULTS/bias_ice_score_min$TOKENS.png"
  echo "\$ workbench correlate humaneval-codex-python -m codebleu -m chrf -m codebertscore_f1 -m gpt35_nswr --dedup $OUT/dedup-min$TOKENS"
  $W correlate humaneval-codex-python -m codebleu -m chrf -m codebertscore_f1 -m gpt35_nswr --dedup "$OUT/dedup-min$TOKENS" \
      --length-column none --baseline codebleu --json "$RESULTS/bias_ice_score_correlate_min$TOKENS.json"
done
# the whole program the model wrote (prompt + completion) against HumanEval's prompt + canonical solution
$W dedup humaneval-codex-python --code-column prompt,completion_multipl_e $IDS --against humaneval --min-tokens 20 \
    --no-progress --json -o "$OUT/against-program" > "$OUT/against-program.json"
echo "## decontamination of prompt + completion against humaneval (prompt + canonical_solution), --min-tokens 20"
echo "\$ workbench bias $OUT/dedup-min20 humaneval-codex-python $METRICS $IDS --task-column task_id --label passed --contamination $OUT/against-program"
$W bias "$OUT/dedup-min20" humaneval-codex-python $METRICS $IDS --task-column task_id --label passed \
    --contamination "$OUT/against-program" --json "$RESULTS/bias_ice_score_program_against_humaneval.json"
} 2>&1 | tr '\r' '\n' | grep -v '^Generating ' | tee "$RESULTS/bias_ice_score.txt"

# A train/test corpus with a SYNTHETIC per-file metric (benchmarks/bias_synthetic_metric.py: a "memorising model"
# scores 0.9 on test files with a planted train copy, 0.4 elsewhere) on the 2k-file corpus of ../shared/bench
{
python3 "${SHARED_BENCH:-../shared/bench}/make_dup_corpus.py" --out "$OUT/dupcorpus2k" --n 2000 --seed 7 > /dev/null
python3 benchmarks/bias_synthetic_metric.py "$OUT/dupcorpus2k" "$OUT/dupcorpus2k/synthetic_metric.jsonl"
$W dedup "$OUT/dupcorpus2k/corpus.jsonl" --split-column split --id-column id --no-progress --json -o "$OUT/dupcorpus2k-dedup" \
    > "$OUT/dupcorpus2k-dedup.json"
echo "## synthetic train/test corpus (2k files, seed 7), synthetic 'memorising model' accuracy"
echo "\$ workbench bias $OUT/dupcorpus2k-dedup $OUT/dupcorpus2k/synthetic_metric.jsonl -m accuracy -m planted_train_copy --id-column id"
$W bias "$OUT/dupcorpus2k-dedup" "$OUT/dupcorpus2k/synthetic_metric.jsonl" -m accuracy -m planted_train_copy --id-column id \
    --json "$RESULTS/bias_synthetic_train_test.json" --plot "$RESULTS/bias_synthetic_train_test.png"

# MultiPL-E: all 200 Codex completions per HumanEval task with MultiPL-E's own execution (passed), duplicates within tasks
$W dedup "${SHARED_DATA:-../shared/data}/multipl-e-codex-python/completions.jsonl.gz" --code-column completion \
    --id-column task_id,completion_id --group-column task_id --against humaneval --min-tokens 5 --no-progress --json \
    -o "$OUT/multipl-e-dedup" > "$OUT/multipl-e-dedup.json"
echo "## MultiPL-E Codex Python completions (32,200), in-task dedup --min-tokens 5, against humaneval"
echo "\$ workbench bias $OUT/multipl-e-dedup .../completions.jsonl.gz -m passed --id-column task_id,completion_id --task-column task_id"
$W bias "$OUT/multipl-e-dedup" "${SHARED_DATA:-../shared/data}/multipl-e-codex-python/completions.jsonl.gz" -m passed \
    --id-column task_id,completion_id --task-column task_id --json "$RESULTS/bias_multipl_e_passed.json"
} 2>&1 | tr '\r' '\n' | grep -v '^Generating ' | tee -a "$RESULTS/bias_ice_score.txt"
