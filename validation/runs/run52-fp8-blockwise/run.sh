#!/usr/bin/env bash
# Run 52 entry point (repo root): OUT=dir bash validation/runs/run52-fp8-blockwise/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi; python3 -c "import torch; print('torch', torch.__version__)"; python3 -c "import triton; print('triton', triton.__version__)"; } > "$R/env.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active,temperature.gpu
nvidia-smi --query-gpu=$F --format=csv -lms 200 > "$R/clocks.csv" 2>/dev/null &
S=$!
timeout 400 python3 "$HERE/quant.py" "$R" 2>&1 | tee "$R/log.txt"
kill $S 2>/dev/null
tar czf "$OUT/run52.tgz" -C "$R" .
