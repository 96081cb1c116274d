#!/usr/bin/env bash
# Run 30 entry point (repo root): OUT=dir bash validation/runs/run30-fused-kernels/run.sh
# Output packed into $OUT/run30.tgz (a call returns at most 8 files).
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"; } > "$R/env.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active,temperature.gpu
nvidia-smi --query-gpu=$F --format=csv -lms 100 > "$R/clocks.csv" 2>/dev/null &
S=$!
timeout 480 python3 "$HERE/fused.py" "$R" 2>&1 | tee "$R/log.txt"
kill $S 2>/dev/null
tar czf "$OUT/run30.tgz" -C "$R" .
