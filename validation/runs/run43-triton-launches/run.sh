#!/usr/bin/env bash
# Run 43 entry point (repo root): OUT=dir bash validation/runs/run43-triton-launches/run.sh
# Run 42's Triton FlashAttention (mma.sync build) again with the source's per-tile barrier in the backward,
# both backward launches written for every shape, and the per-(batch, head) launch from 8 to 528 programs.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi --query-gpu=serial --format=csv,noheader;
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
DISABLE_MMA_V3=1 TRITON_CACHE_DIR=/tmp/tc-v2 timeout 480 python3 validation/attention_triton.py "$OUT/triton_v2_launches.toml" --mma v2 --both-launches --back-to-back "${LOOP:-5}" 2>&1 | tee "$OUT/triton_v2_launches.log"
kill $smi 2>/dev/null
