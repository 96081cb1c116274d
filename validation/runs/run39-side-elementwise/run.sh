#!/usr/bin/env bash
# Run 39 entry point (repo root): OUT=dir bash validation/runs/run39-side-elementwise/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; } > "$OUT/nvidia-smi.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F --format=csv -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
S=$!
timeout 400 python3 "$HERE/side_elementwise.py" "$OUT" --passes 5 2>&1 | tee "$OUT/log.txt"
kill $S 2>/dev/null
