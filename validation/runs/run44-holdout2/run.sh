#!/usr/bin/env bash
# Run 44 entry point (repo root): OUT=dir bash validation/runs/run44-holdout2/run.sh
# 1. Twelve training steps on one H200 never measured before (train_step.py --set holdout2), predicted first
#    (predictions.md, committed before the call) by the model and shipped calibration of that commit.
# 2. The expert GEMMs of run 14c again with fp8 dense twins: one fp8 GEMM over all the group's tokens with
#    tensor-wise (fp8_loop's) and row-wise (fp8_grouped's) scales, beside bf16 grouped/dense and fp8 loop/grouped.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi --query-gpu=serial --format=csv,noheader;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 330 python3 validation/train_step.py "$OUT/h200_steps_holdout2.csv" --set holdout2 --passes 3 --steps 6 --budget-s 300 2>&1 | tee "$OUT/holdout2.log"
date -u >> "$OUT/env.txt"
timeout 200 python3 validation/runs/run14-interference/grouped_gemm.py "$OUT" --equal-only --passes 3 --deadline 170 \
  --methods grouped,dense,fp8_loop,fp8_grouped,fp8_dense,fp8_dense_rw 2>&1 | tee "$OUT/grouped_gemm.log"
date -u >> "$OUT/env.txt"
kill $smi 2>/dev/null
