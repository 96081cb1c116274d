#!/usr/bin/env bash
# Run 15 entry point: OUT=dir bash validation/runs/run15-sustained/run.sh  (from the repo root)
# Samples nvidia-smi every 100 ms for the whole run, runs the probe once (its clock recording:
# sm_clock_gemm_mhz / power_gemm_w), then sustained.py.
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1; python3 -c "import torch;print(torch.__version__, torch.version.cuda)" >> "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$R/clocks.csv" 2>/dev/null &
smi=$!
echo "$(date +%s.%N) probe_build" >> "$R/phases.txt"
if probe/build.sh /tmp/probe > "$R/probe_build.log" 2>&1; then
  echo "$(date +%s.%N) probe" >> "$R/phases.txt"
  timeout 200 /tmp/probe --out "$R/h200-probe-r15.toml" --scenario probe/examples/llama3-8b-tp2.toml > "$R/probe.log" 2>&1 || echo "probe failed rc=$?" | tee -a "$R/probe.log"
else
  echo "probe build failed"; tail -20 "$R/probe_build.log"
fi
echo "$(date +%s.%N) sustained" >> "$R/phases.txt"
timeout 420 python3 "$here/sustained.py" "$R/sustained.csv" "${SECONDS_PER_SEQ:-24}" 2>&1 | tee "$R/sustained.log"
kill $smi 2>/dev/null
tar czf "$OUT/run15.tgz" -C "$OUT" r
grep -E "sm_clock|power_gemm" "$R/h200-probe-r15.toml" | head
