#!/bin/bash
# Issue 5 closing figures: the four `workbench score` methods on the stratified 100 samples (50 tasks, one pass and one
# fail each) of the bundled ICE-Score set with local/qwen2.5-coder-0.5b, then `workbench correlate` against our own
# execution (RESULTS: results.jsonl of `workbench execute humaneval-codex-python --completion-column completion_multipl_e`).
# With a filled response cache (CACHE) it is all cache hits; from an empty one it is ~5 CPU hours on 2 cores.
set -e
mkdir -p "${RUNS:-runs}" && cd "${RUNS:-runs}"
W=workbench
$W score humaneval-codex-python \
  -m ice-score -m dsa-cqe-simplified -m chrf -m dsa-cqe --model "${MODEL:-local/qwen2.5-coder-0.5b}" \
  --generation-column completion_multipl_e --limit 100 --select stratified \
  --carry passed --carry codebleu --carry codebertscore_f1 --carry codebertscore_f3 --carry gpt35_nswr --carry gpt35_nsnr \
  --cache-dir "${CACHE:-issue5-cache}" -o issue5-final --resume --timeout 300 -q
$W correlate issue5-final/scores_wide.jsonl \
  -m dsa-cqe -m dsa-cqe-simplified -m ice-score -m chrf -m codebleu -m codebertscore_f1 -m gpt35_nswr \
  --results "${RESULTS:?path of workbench execute results.jsonl for the 3,220 samples}" \
  --json issue5-final/correlate.json --plot issue5-final/correlate.png
