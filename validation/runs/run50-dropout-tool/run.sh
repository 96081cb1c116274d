#!/usr/bin/env bash
# Run 50 entry point (repo root): OUT=dir bash validation/runs/run50-dropout-tool/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
nvidia-smi > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 300 python3 validation/attention_sdpa.py "$OUT/drop.toml" --back-to-back 10 --dropout 0.1 2>&1 | tee "$OUT/drop.log"
kill $smi 2>/dev/null
