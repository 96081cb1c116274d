#!/usr/bin/env bash
# Run 56 entry point (repo root): OUT=dir bash validation/runs/run56-squared-relu/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
timeout 240 python3 "$HERE/srelu.py" "$OUT" 2>&1 | tee "$OUT/log.txt"
kill $smi 2>/dev/null
