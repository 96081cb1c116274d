#!/usr/bin/env bash
# Run 38 entry point (repo root): OUT=dir bash validation/runs/run38-mpt-block/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
# shape d heads seq mbs ac: the llm-foundry rows' (validation/fsdp/rows.csv)
for cfg in "1b 2048 16 2048 12 none" "3b 2560 20 2048 8 none" "7b 4096 32 2048 6 none" \
           "13b 5120 40 2048 16 full" "30b 7168 56 2048 8 full" "70b 8192 64 2048 8 full"; do
  timeout 120 python3 "$here/mpt_block.py" "$R/mpt_block.csv" $cfg >> "$R/run.log" 2>&1 || echo "FAILED $cfg" | tee -a "$R/run.log"
done
cat "$R/mpt_block.csv"
