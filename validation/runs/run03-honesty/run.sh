#!/usr/bin/env bash
# Third device call (2026-11-29): the GEMM honesty check with 3 alternating passes per
# shape (median of each side), bf16 shapes of the probe's list. Outputs in $OUT.
# Run from the folder holding probe/ and validation/.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv; } > "$OUT/env.txt" 2>&1
probe/build.sh /tmp/probe 2>&1 | tail -2
echo "== gemm honesty, 3 passes ($(( $(date +%s) - t0 )) s)"
timeout 330 python3 validation/gemm_torch.py probe/results/h200-probe.toml "$OUT/h200_gemm_probe_vs_torch_3pass.csv" \
  --probe /tmp/probe --passes 3 --dtype bf16 2>&1 | tee "$OUT/honesty3.log" | tail -8
echo "== done ($(( $(date +%s) - t0 )) s)"
