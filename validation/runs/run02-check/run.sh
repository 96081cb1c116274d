#!/usr/bin/env bash
# Second device call (2026-11-29): the GEMM honesty check done right (probe --serve
# and torch alternating shape by shape, both timed under CUDA graph replay and
# eagerly), fused attention through SDPA at the training runs' own shapes (FA2 =
# FLASH_ATTENTION, the backend train_step.py forces; cuDNN for reference) with the
# kernel names each backend launches, and a kernel-time profile of a few training
# steps. Outputs in $OUT (all.tar.gz + all.log). Run from the folder holding probe/ and validation/.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"; W=$(mktemp -d)
log() { tee -a "$W/all.log"; }
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv; } > "$W/env.txt" 2>&1
echo "== build" | log
probe/build.sh /tmp/probe 2>&1 | tail -2 | log
echo "== gemm honesty ($(( $(date +%s) - t0 )) s)" | log
timeout 200 python3 validation/gemm_torch.py probe/results/h200-probe.toml "$W/h200_gemm_probe_vs_torch.csv" --probe /tmp/probe 2>&1 | log
echo "== sdpa ($(( $(date +%s) - t0 )) s)" | log
timeout 100 python3 validation/attention_sdpa.py "$W/sdpa.toml" 2>&1 | log
echo "== profile ($(( $(date +%s) - t0 )) s)" | log
timeout 120 python3 validation/profile_step.py "$W/h200_step_profile.csv" 2>&1 | grep -v Warning | log
echo "== done ($(( $(date +%s) - t0 )) s)" | log
tar czf "$OUT/all.tar.gz" -C "$W" . ; cp "$W/all.log" "$OUT/all.log"
