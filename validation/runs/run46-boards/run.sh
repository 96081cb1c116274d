#!/usr/bin/env bash
# Run 46 entry point (repo root): OUT=dir bash validation/runs/run46-boards/run.sh
# One call per fresh device machine: which board it is, then run 40's workloads at the capped state.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi -q; } > "$OUT/nvidia-smi-q.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F --format=csv -lms 100 > "$OUT/clocks.csv" 2>/dev/null &
S=$!
timeout 200 python3 "$HERE/../run40-interval-jitter/jitter.py" "$OUT" --duration 25 --warmup 15 2>&1 | tee "$OUT/log.txt"
kill $S 2>/dev/null
nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE,CLOCK > "$OUT/nvidia-smi-after.txt" 2>&1
