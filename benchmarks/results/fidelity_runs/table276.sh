#!/bin/bash
# The 276-sample fidelity table (all 138 HumanEval tasks with a passing and a failing Codex sample): the cells of
# drive276.sh that are complete joined onto the committed table of session 23, correlated against our own
# execution, Markdown. A cell still running is left out (no correlation is read from a partial cell).
#   BENCH=/path/to/repo/benchmarks bash table276.sh OUT_PREFIX   (inside a copy of this folder, a workbench venv active)
# Needs RESULTS (default exec-codex.jsonl), made as table.sh says.
set -euo pipefail
OUT=${1:?output prefix, e.g. fidelity_session25_276}
HERE="$(cd "$(dirname "$0")" && pwd)"
BENCH="$(cd "${BENCH:-$HERE/../..}" && pwd)"
RESULTS=${RESULTS:-exec-codex.jsonl}
BASE="$BENCH/results/fidelity_session23_276.scores.jsonl"
# complete: 276 samples whose last row is ok (a resume or --retry-failed appends rows; error rows are not scores)
complete() { [ -s "$1/scores.jsonl" ] && python - "$1/scores.jsonl" <<'PY'
import json, sys
last = {}
for line in open(sys.argv[1]):
    row = json.loads(line)
    last[(row["task_id"], row["sample_id"])] = row.get("status")
sys.exit(0 if sum(status == "ok" for status in last.values()) >= 276 else 1)
PY
}
JOIN=()
for model in 1.5b 0.5b; do
  complete "276/q$model/p-correct-analyse" && JOIN+=("p-correct-analyse/q$model=276/q$model/p-correct-analyse:p-correct")
  complete "276/q$model/p-correct-noref-analyse" && JOIN+=(
    "p-correct-noref-analyse/q$model=276/q$model/p-correct-noref-analyse:p-correct")
  complete "276/q$model/dsa-cqe-simplified-expected" && JOIN+=(
    "dsa-cqe-simplified/expected/q$model=276/q$model/dsa-cqe-simplified-expected:dsa-cqe-simplified"
    "dsa-cqe-simplified/written/q$model=276/q$model/dsa-cqe-simplified-expected:dsa-cqe-simplified:score_sampled")
  complete "276/q$model/dsa-cqe-simplified-final-p-correct" && JOIN+=(
    "dsa-cqe-simplified/p-correct/q$model=276/q$model/dsa-cqe-simplified-final-p-correct:dsa-cqe-simplified")
  complete "q$model/dsa-cqe-expected" && JOIN+=(
    "dsa-cqe/expected/q$model=q$model/dsa-cqe-expected:dsa-cqe"
    "dsa-cqe/written/q$model=q$model/dsa-cqe-expected:dsa-cqe:score_sampled")
  complete "q$model/dsa-cqe-final-p-correct" && JOIN+=("dsa-cqe/p-correct/q$model=q$model/dsa-cqe-final-p-correct:dsa-cqe")
done
[ ${#JOIN[@]} -gt 0 ] || { echo "no 276-row cell is complete yet" >&2; exit 1; }
python "$BENCH/join_scores.py" --base "$BASE" "$OUT.scores.jsonl" "${JOIN[@]}"
mapfile -t METRICS < <(python "$HERE/metric_columns.py" "$OUT.scores.jsonl")
ARGS=()
for name in "${METRICS[@]}"; do ARGS+=(-m "$name"); done
# issue 20's combinations, declared before the data: the equal-weight rank means of the 276 tables of sessions 12-17
# (P(Yes) with CodeBLEU, with chrF) and of the 100 table (DSA-CQE's P(Yes) with CodeBLEU)
ARGS+=(--combine "p-correct/q1.5b+codebleu=rank-mean:p-correct/q1.5b,codebleu"
       --combine "p-correct/q1.5b+chrf=rank-mean:p-correct/q1.5b,chrf")
for name in "${METRICS[@]}"; do
  case "$name" in dsa-cqe/p-correct/q1.5b) ARGS+=(--combine "$name+codebleu=rank-mean:$name,codebleu");; esac
done
workbench correlate "$OUT.scores.jsonl" "${ARGS[@]}" --results "$RESULTS" --length-column completion_multipl_e \
  --baseline codebleu --baseline chrf --json "$OUT.correlate.json"
python "$BENCH/fidelity_table.py" "$OUT.correlate.json" > "$OUT.md"
echo "table: $PWD/$OUT.md" >&2
