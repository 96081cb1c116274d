#!/usr/bin/env bash
# Run 35 entry point (repo root): OUT=dir bash validation/runs/run35-step-loss-memory/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
for loss in eager compiled; do
  for mode in none full; do
    for shape in "4 8192 1" "4 8192 2"; do
      timeout 200 python3 "$here/step_memory.py" "$R" $loss $mode $shape >> "$R/run.log" 2>&1 \
        || echo "FAILED $loss $mode $shape" | tee -a "$R/run.log"
    done
  done
done
cat "$R/summary.csv"
