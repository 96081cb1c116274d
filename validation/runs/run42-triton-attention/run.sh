#!/usr/bin/env bash
# Run 42 entry point (repo root): OUT=dir bash validation/runs/run42-triton-attention/run.sh
# llm-foundry's Triton FlashAttention (our kernel with its algorithm, validation/attention_triton.py), back to back,
# compiled for Ampere's mma.sync (DISABLE_MMA_V3=1, as the rows' 2022 compiler did on Hopper) and for Hopper's
# wgmma, with FlashAttention-2 through SDPA at the rows' shapes in the same process.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi; nvidia-smi --query-gpu=serial --format=csv,noheader;
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
DISABLE_MMA_V3=1 TRITON_CACHE_DIR=/tmp/tc-v2 timeout 240 python3 validation/attention_triton.py "$R/triton_v2.toml" --mma v2 --back-to-back "${LOOP:-5}" 2>&1 | tee "$R/triton_v2.log"
TRITON_CACHE_DIR=/tmp/tc-v3 timeout 200 python3 validation/attention_triton.py "$R/triton_v3.toml" --mma v3 --back-to-back "${LOOP:-5}" 2>&1 | tee "$R/triton_v3.log"
kill $smi 2>/dev/null
cp "$R"/* "$OUT"/ 2>/dev/null
