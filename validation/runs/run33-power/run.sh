#!/usr/bin/env bash
# Run 33 entry point (repo root): OUT=dir bash validation/runs/run33-power/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; nvidia-smi -q -d POWER,CLOCK,PERFORMANCE; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 400 python3 "$here/power.py" "$R" "${SECONDS_PER_CASE:-8}" 2>&1 | tee "$R/power.log"
kill $smi 2>/dev/null
python3 "$here/by_phase.py" "$R" | tee "$R/by_phase.txt"
# The same curve through the probe's own cuBLASLt path (probe --power): built here, on the device.
if timeout 300 bash probe/build.sh "$R/probe" > "$R/probe_build.log" 2>&1; then
  timeout 300 "$R/probe" --power "${SECONDS_PER_CASE:-8}" --out "$R/probe_power.toml" 2>&1 | tee "$R/probe_power.log"
  rm -f "$R/probe"
else
  echo "probe build failed (probe_build.log)"
fi
