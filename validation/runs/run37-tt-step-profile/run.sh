#!/usr/bin/env bash
# Run 37 entry point (repo root): OUT=dir bash validation/runs/run37-tt-step-profile/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
for cfg in "fp8 on op 4 8192 2" "bf16 on op 4 8192 2" "bf16 off op 4 8192 2"; do
  echo "== $cfg $(date +%T)" >> "$R/run.log"
  timeout 170 python3 "$here/profile_step.py" "$R" $cfg >> "$R/run.log" 2>&1 || echo "FAILED $cfg" | tee -a "$R/run.log"
done
cat "$R/steps.csv"; ls -la "$R"
