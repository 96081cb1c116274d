#!/usr/bin/env bash
# Run 32 entry point (repo root): OUT=dir bash validation/runs/run32-offload/run.sh
# The host link activation offloading crosses (pinned D2H / H2D, alone and together), a GEMM beside those
# copies, and Transformer Engine's offload schedule on a toy block. Output packed into $OUT/run32.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi; nvidia-smi -q | grep -i -A3 'PCIe Generation\|Link Width'; python3 -c "import torch; print('torch', torch.__version__)"; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 420 python3 "$HERE/offload.py" "$R" 2>&1 | tee "$R/log.txt"
kill $smi 2>/dev/null
tar czf "$OUT/run32.tgz" -C "$R" .
