#!/usr/bin/env bash
# Run 40 entry point (repo root): OUT=dir bash validation/runs/run40-interval-jitter/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; } > "$OUT/nvidia-smi.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F --format=csv -lms 100 > "$OUT/clocks.csv" 2>/dev/null &
S=$!
timeout 300 python3 "$HERE/jitter.py" "$OUT" --duration 40 --warmup 15 2>&1 | tee "$OUT/log.txt"
kill $S 2>/dev/null
