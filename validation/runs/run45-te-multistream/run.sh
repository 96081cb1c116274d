#!/usr/bin/env bash
# Run 45 entry point (repo root): OUT=dir bash validation/runs/run45-te-multistream/run.sh
# Run 14c's expert-GEMM grid (equal routing) with Transformer Engine's arrangement of a grouped GEMM: the
# per-expert GEMMs round-robin over 4 side streams (loop4, fp8_loop4), beside the single-stream loops, one
# dense GEMM over all the tokens (bf16, fp8) and torch's grouped calls.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 300 python3 validation/runs/run14-interference/grouped_gemm.py "$OUT" --equal-only --passes 3 --deadline 270 \
  --methods loop_graph,loop4,grouped,dense,fp8_loop,fp8_loop4,fp8_grouped,fp8_dense 2>&1 | tee "$OUT/grouped_gemm.log"
date -u >> "$OUT/env.txt"
kill $smi 2>/dev/null
