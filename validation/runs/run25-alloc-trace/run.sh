#!/usr/bin/env bash
# Run 25 entry point (repo root): OUT=dir bash validation/runs/run25-alloc-trace/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
nvidia-smi > "$R/env.txt" 2>&1
python3 -c "import torch; print(torch.__version__)" >> "$R/env.txt" 2>&1
for shape in "4 8192 1" "4 8192 2" "8 4096 2"; do
  for mode in none full op; do
    timeout 90 python3 "$here/alloc_trace.py" "$R" fsdp2 $mode $shape 2>&1 | tail -3 | tee -a "$R/run.log"
  done
done
for mode in none full op; do
  timeout 90 python3 "$here/alloc_trace.py" "$R" plain $mode 4 8192 1 2>&1 | tail -3 | tee -a "$R/run.log"
done
ls -la "$R" >> "$R/run.log"
