#!/bin/bash
# Full DSA-CQE on the stratified 100 (issues 15, 20): 1.5B both final steps alternated in chunks
# (they share the sub-code analyses through the response cache), then the 0.5B cells.
set -u
. /work/fid-tree/.venv/bin/activate
export LITELLM_LOCAL_MODEL_COST_MAP=True
ROWS=(humaneval-codex-python --generation-column completion_multipl_e --limit 100 --select stratified
      --carry passed --carry completion_multipl_e --carry codebleu --carry codebertscore_f1
      --carry codebertscore_f3 --carry gpt35_nswr --carry gpt35_nsnr)
cell() {  # cell FOLDER CHUNK_S args...: one resumable chunk; returns 0 when the folder holds 100 rows
  local folder=$1 chunk=$2; shift 2
  local started=$SECONDS
  mkdir -p "$(dirname "$folder")"
  timeout --signal=INT "$chunk" workbench score "${ROWS[@]}" --cache-dir cache -o "$folder" --resume \
    --timeout 600 --no-progress "$@" >> "$folder.log" 2>&1
  local rc=$?
  local n=$(wc -l < "$folder/scores.jsonl" 2>/dev/null || echo 0)
  echo "$(date -u +%H:%M:%S) $folder rc=$rc rows=$n chunk=$((SECONDS-started))s" >> progress.txt
  [ "$rc" = 0 ] && return 0
  [ "$rc" = 124 ] || [ "$rc" = 130 ] && return 1
  echo "$(date -u +%H:%M:%S) $folder failed (rc=$rc): see $folder.log" >> progress.txt
  exit 1  # a failure that is not a timeout: stop the queue rather than loop or skip
}
for model in 1.5b 0.5b; do
  M=(--model local/qwen2.5-coder-$model -m dsa-cqe)
  a=0; b=0
  while [ $a = 0 ] || [ $b = 0 ]; do
    [ $a = 0 ] && { cell q$model/dsa-cqe-expected 2400 "${M[@]}" --score-mode expected && a=1; }
    [ $b = 0 ] && { cell q$model/dsa-cqe-final-p-correct 2400 "${M[@]}" --final-step p-correct && b=1; }
  done
done
echo "$(date -u +%H:%M:%S) all done" >> progress.txt
