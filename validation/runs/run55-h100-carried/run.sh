#!/usr/bin/env bash
# Run 55 entry point (repo root): OUT=dir bash validation/runs/run55-h100-carried/run.sh
# The families run 54 carried from the H200 into hardware/calibration/h100-probe.toml, measured on the H100 with
# the scripts that measured them on the H200, and DeepSeek-V3's blockwise quantisation at its small shapes with
# inputs that do not sit in the L2 (run 52 could not price those).
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT/grouped" "$OUT/dropout" "$OUT/quant" "$OUT/power"
{ date -u; nvidia-smi; nvidia-smi -q -d POWER,CLOCK,PERFORMANCE; nvidia-smi --query-gpu=serial --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  python3 -c "import triton; print('triton', triton.__version__)"; nproc; } > "$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
PARTS=${PARTS:-"grouped dropout quant power"}  # a second call: PARTS="quant power"
want() { [[ " $PARTS " == *" $1 "* ]]; }
phase() { echo "$1 $(date -u +%H:%M:%S.%N)" >> "$OUT/phases.txt"; }
# 1. runs 14c / 44 / 45's expert GEMMs (equal routing), the methods [gemm_grouped] and [gemm_grouped_fp8] are fitted from
want grouped && phase grouped && timeout 170 python3 validation/runs/run14-interference/grouped_gemm.py "$OUT/grouped" --equal-only --passes 3 --deadline 150 \
  --methods grouped,dense,fp8_loop,fp8_loop4,fp8_dense 2>&1 | tee "$OUT/grouped/log.txt"
# 2. run 48's attention dropout pairs
want dropout && phase dropout && timeout 90 python3 validation/runs/run48-attn-dropout/attn_dropout.py "$OUT/dropout/attn_dropout.csv" --loop 10 2>&1 | tee "$OUT/dropout/log.txt"
# 3. DeepSeek-V3's 1x128 / 128x1 quantisation and a copy, inputs rotated through >= 256 MB (cold L2)
want quant && phase quant && timeout 90 python3 "$HERE/quant_cold.py" "$OUT/quant" 2>&1 | tee "$OUT/quant/log.txt"
# 4. run 33's GEMM power sweep (torch part; 6 s per carve-out)
want power && phase power && timeout 200 python3 validation/runs/run33-power/power.py "$OUT/power" 6 2>&1 | tee "$OUT/power/log.txt"
phase end
kill $smi 2>/dev/null
cp "$OUT/env.txt" "$OUT/clocks.csv" "$OUT/power/"
# the device returns at most 8 files: everything in one archive
tar czf /tmp/run55.tgz -C "$OUT" . && rm -rf "$OUT"/* && mv /tmp/run55.tgz "$OUT/"
ls -la "$OUT"
