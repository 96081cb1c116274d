#!/usr/bin/env bash
# GPU call of run 10 (2026-11-29, validation/runlog.md): (1) the same-process honesty check
# (validation/gemm_inproc.py: torch.matmul, the probe's GEMM code through libmfusim_probe.so on
# the same buffers, and the probe's own process, 128 bf16 shapes, with clocks and power logged
# every 200 ms); (2) the host cost of activation checkpointing per layer (validation/host_ckpt.py).
# Run from the folder holding probe/ and validation/. Outputs in $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PASSES=${PASSES:-7}; DEADLINE=${DEADLINE:-200}
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'default blas', torch.backends.cuda.preferred_blas_library())"
  nproc; } > "$OUT/env.txt" 2>&1
probe/build.sh /tmp/probe > "$OUT/build.log" 2>&1 && probe/build.sh /tmp/libmfusim_probe.so --lib >> "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "== built ($(( $(date +%s) - t0 )) s)"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$OUT/clocks.csv" 2>&1 & smi=$!
timeout 330 python3 validation/gemm_inproc.py probe/results/h200-probe.toml "$OUT/h200_gemm_inproc.csv" \
  --probe /tmp/probe --lib /tmp/libmfusim_probe.so --passes "$PASSES" --deadline "$DEADLINE" > "$OUT/inproc.log" 2>&1
rc=$?
kill $smi 2>/dev/null
grep -E "^(gemm inproc|#)" "$OUT/inproc.log" | cut -c1-300
[ $rc -ne 0 ] && tail -30 "$OUT/inproc.log"
echo "== inproc rc=$rc ($(( $(date +%s) - t0 )) s)"
timeout 200 python3 validation/host_ckpt.py "$OUT/host_ckpt.csv" --steps 20 --passes 2 > "$OUT/host_ckpt.log" 2>&1
rc2=$?
cat "$OUT/host_ckpt.log" | cut -c1-400 | tail -12
echo "== done rc=$rc/$rc2 ($(( $(date +%s) - t0 )) s)"
