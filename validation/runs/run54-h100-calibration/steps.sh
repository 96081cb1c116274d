#!/usr/bin/env bash
# Run 54, second call (repo root): OUT=dir bash validation/runs/run54-h100-calibration/steps.sh
# Run 4's training-step set (train_step.py main: 36 single-GPU steps, eager PyTorch, bf16 autocast, AdamW) on
# the H100, passes interleaved, predicted first (README.md) from the H200's calibration as the cost model
# transfers it to the H100 (validation_compare --hardware h100-sxm).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi --query-gpu=serial --format=csv,noheader;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nproc; lscpu | grep -i "model name"; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 560 python3 validation/train_step.py "$OUT/h100_steps.csv" --passes 3 --steps 6 --budget-s ${BUDGET_S:-480} 2>&1 | tee "$OUT/steps.log" | tail -5
date -u >> "$OUT/env.txt"
kill $smi 2>/dev/null
