#!/usr/bin/env bash
# Run 36 entry point (repo root): OUT=dir bash validation/runs/run36-tt-step-time/run.sh
# Each configuration in its own process (a failing float8 or compile path leaves the others standing); the SM
# clock and board power sampled every 200 ms beside them (clocks.csv).
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 \
  > "$R/clocks.csv" 2>&1 &
smi=$!
# prec compile mode layers seq mbs: the TT25T rows' block (fp8, compiled, per-op SAC, 8192 x 2) first
for cfg in "fp8 on op 8 8192 2" "bf16 on op 8 8192 2" "fp8 on op 4 8192 2" "bf16 on op 4 8192 2" \
           "bf16 off op 8 8192 2" "fp8 off op 8 8192 2"; do
  echo "== $cfg $(date +%T)" >> "$R/run.log"
  timeout 150 python3 "$here/step_time.py" "$R" $cfg >> "$R/run.log" 2>&1 \
    || { echo "FAILED $cfg (fullgraph); again without" | tee -a "$R/run.log";
         FULLGRAPH=0 timeout 150 python3 "$here/step_time.py" "$R" $cfg >> "$R/run.log" 2>&1 \
           || echo "FAILED $cfg" | tee -a "$R/run.log"; }
done
kill $smi 2>/dev/null
cat "$R/summary.csv"
