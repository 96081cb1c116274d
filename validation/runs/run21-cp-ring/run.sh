#!/usr/bin/env bash
# Run 21 entry point (repo root): OUT=dir bash validation/runs/run21-cp-ring/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
if [ "${LOOP:-1}" -gt 1 ]; then
  timeout 420 python3 "$here/cp_ring.py" "$R/cp_ring_loop.csv" --loop "$LOOP" 2>&1 | tee "$R/cp_ring_loop.log"
else
  timeout 420 python3 "$here/cp_ring.py" "$R/cp_ring.csv" 2>&1 | tee "$R/cp_ring.log"
fi
kill $smi 2>/dev/null
