#!/usr/bin/env bash
# Run 47 entry point (repo root): OUT=dir bash validation/runs/run47-fa2-ring/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 480 python3 "$here/fa2_ring.py" "$OUT/fa2_ring.csv" --loop 5 2>&1 | tee "$OUT/fa2_ring.log"
kill $smi 2>/dev/null
