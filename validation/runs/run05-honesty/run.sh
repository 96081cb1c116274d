#!/usr/bin/env bash
# Honesty call of run 5 (2026-11-29; run 4 is another engineer's call): probe and torch run the
# SAME cuBLAS entry point with the SAME workspace, pair by pair (cuBLASLt 64 MiB; cublasGemmEx 32 MiB), on the same cuBLAS
# library, and each side reports the kernel it ran (validation/gemm_torch.py docstring).
# bf16 shapes of the probe's list, 9 alternating passes (fewer past the deadline; the CSV
# says how many). Outputs in $OUT. Run 5 ran it with gemm_torch.py of commit 043d324 (torch's
# kernel names taken with torch.profiler in the first pass, before timing: run 6 fixes that). Run from the folder holding probe/ and validation/.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PASSES=${PASSES:-9}; DEADLINE=${DEADLINE:-230}
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'default blas', torch.backends.cuda.preferred_blas_library())"
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version | tail -2; ls -l /usr/local/cuda/lib64/libcublas*.so.* 2>&1
  python3 -m pip list 2>/dev/null | grep -i -E "^(torch|nvidia-cublas)"; } > "$OUT/env.txt" 2>&1
probe/build.sh /tmp/probe > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "== built ($(( $(date +%s) - t0 )) s)"
timeout 400 python3 validation/gemm_torch.py probe/results/h200-probe.toml "$OUT/h200_gemm_match.csv" \
  --probe /tmp/probe --passes "$PASSES" --dtype bf16 --deadline "$DEADLINE" > "$OUT/honesty5.log" 2>&1
rc=$?
grep -E "^(gemm honesty|  outside|torch.profiler|#)" "$OUT/honesty5.log" | cut -c1-400
[ $rc -ne 0 ] && tail -30 "$OUT/honesty5.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/env.txt" 2>&1
echo "== done rc=$rc ($(( $(date +%s) - t0 )) s)"
