#!/bin/bash
# After drive.sh (full DSA-CQE on the stratified 100): the cells of issues 15 and 20 still missing on the 276
# stratified samples (all 138 tasks with both outcomes). 1.5B first, each model's cheapest cells first; pairs that share sub-code analyses
# through the response cache alternate in chunks. The stratified 100 are a prefix of the 276, so the full DSA-CQE
# folders of drive.sh continue to 276 with a larger --limit (a resume keeps their 100 rows).
set -u
cd "$(dirname "$0")"
. "${VENV:-/work/fid-tree/.venv}/bin/activate"
export LITELLM_LOCAL_MODEL_COST_MAP=True
ROWS=(humaneval-codex-python --generation-column completion_multipl_e --select stratified
      --carry passed --carry completion_multipl_e --carry codebleu --carry codebertscore_f1
      --carry codebertscore_f3 --carry gpt35_nswr --carry gpt35_nsnr)
cell() {  # cell FOLDER CHUNK_S args...: one resumable chunk of 276 rows; returns 0 when the folder is complete
  local folder=$1 chunk=$2; shift 2
  local started=$SECONDS
  mkdir -p "$(dirname "$folder")"
  timeout --signal=INT "$chunk" workbench score "${ROWS[@]}" --limit 276 --cache-dir cache -o "$folder" --resume \
    --timeout 600 --no-progress "$@" >> "$folder.log" 2>&1
  local rc=$?
  local n=$(wc -l < "$folder/scores.jsonl" 2>/dev/null || echo 0)
  echo "$(date -u +%H:%M:%S) $folder rc=$rc rows=$n chunk=$((SECONDS-started))s" >> progress.txt
  [ "$rc" = 0 ] && return 0
  [ "$rc" = 124 ] || [ "$rc" = 130 ] && return 1
  echo "$(date -u +%H:%M:%S) $folder failed (rc=$rc): see $folder.log" >> progress.txt
  exit 1  # a failure that is not a timeout: stop the queue rather than loop or skip
}
pair() {  # pair FOLDER_A FOLDER_B COMMON_ARGS -- ARGS_A -- ARGS_B: alternate two cells in 40-minute chunks
  local a_folder=$1 b_folder=$2; shift 2
  local common=() a_args=() b_args=()
  while [ "$1" != -- ]; do common+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do a_args+=("$1"); shift; done; shift
  b_args=("$@")
  local a=0 b=0
  while [ $a = 0 ] || [ $b = 0 ]; do
    [ $a = 0 ] && { cell "$a_folder" 2400 "${common[@]}" "${a_args[@]}" && a=1; }
    [ $b = 0 ] && { cell "$b_folder" 2400 "${common[@]}" "${b_args[@]}" && b=1; }
  done
}
ALL_DAY=86400
cell 276/q0.5b/ice-score-expected $ALL_DAY --model local/qwen2.5-coder-0.5b -m ice-score --score-mode expected
# the 1.5B cells first (session 24): every 0.5B judge stayed at or below tau .13 on the 100, so the 1.5B cells are
# the ones that can answer issue 20 (does decomposition help when the last read is P(Yes)?) on the 276
# session 26: the fourth p-correct variant of issue 20 (without the reference, analyse first; CodeJudge's form of the
# judge that ranked best one-step) was never measured; added here before any of its rows exist, right after the
# analyse-first cell with the reference. Declared comparison: p-correct-noref-analyse/q1.5b against CodeBLEU and chrF
# on the 276 (and on its stratified-100 prefix), paired task bootstrap as for the other cells; no combination added.
for model in 1.5b 0.5b; do
  cell 276/q$model/p-correct-analyse $ALL_DAY --model local/qwen2.5-coder-$model -m p-correct --analyse-first
  cell 276/q$model/p-correct-noref-analyse $ALL_DAY --model local/qwen2.5-coder-$model -m p-correct --no-reference \
    --analyse-first
  pair 276/q$model/dsa-cqe-simplified-expected 276/q$model/dsa-cqe-simplified-final-p-correct \
    --model local/qwen2.5-coder-$model -m dsa-cqe-simplified -- --score-mode expected -- --final-step p-correct
  # --retry-failed (session 35): the rows of session 35's first hour failed on a damaged response cache (a cache.db
  # committed beside a write-ahead log of another state); their error rows are scored again
  pair q$model/dsa-cqe-expected q$model/dsa-cqe-final-p-correct \
    --model local/qwen2.5-coder-$model -m dsa-cqe --retry-failed -- --score-mode expected -- --final-step p-correct
done
echo "$(date -u +%H:%M:%S) 276 all done" >> progress.txt
