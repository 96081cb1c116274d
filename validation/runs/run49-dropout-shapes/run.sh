#!/usr/bin/env bash
# Run 49 entry point (repo root): OUT=dir bash validation/runs/run49-dropout-shapes/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 420 python3 "$here/dropout_shapes.py" "$OUT/dropout_shapes.csv" --loop 10 2>&1 | tee "$OUT/dropout_shapes.log"
kill $smi 2>/dev/null
