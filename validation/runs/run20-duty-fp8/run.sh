#!/usr/bin/env bash
# Run 17 entry point (repo root): OUT=dir bash validation/runs/run20-duty-fp8/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 300 python3 "$here/duty_fp8.py" "$R/duty_fp8.csv" "${SECONDS_PER_CASE:-8}" 2>&1 | tee "$R/duty.log"
kill $smi 2>/dev/null
python3 "$here/clocks_by_phase.py" "$R" | tee "$R/clocks_by_phase.txt"
