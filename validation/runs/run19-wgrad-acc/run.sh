#!/usr/bin/env bash
# Run 19 entry point (repo root): OUT=dir bash validation/runs/run19-wgrad-acc/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 400 python3 "$here/wgrad_acc.py" "$R/wgrad_acc.csv" "${SECONDS_PER_SEQ:-14}" 2>&1 | tee "$R/wgrad_acc.log"
kill $smi 2>/dev/null
