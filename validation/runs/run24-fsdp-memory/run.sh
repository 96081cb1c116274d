#!/usr/bin/env bash
# Run 24 entry point (repo root): OUT=dir bash validation/runs/run24-fsdp-memory/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
timeout 500 python3 "$here/fsdp_memory.py" "$R/fsdp_memory.csv" 2>&1 | tee "$R/fsdp_memory.log"
