#!/usr/bin/env bash
# Run 22 entry point (repo root): OUT=dir bash validation/runs/run22-attention-b2b/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 540 python3 validation/attention_sdpa.py "$R/sdpa_b2b.toml" --back-to-back "${LOOP:-5}" 2>&1 | tee "$R/sdpa_b2b.log"
kill $smi 2>/dev/null
