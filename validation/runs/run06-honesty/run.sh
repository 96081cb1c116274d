#!/usr/bin/env bash
# Honesty call of run 6 (2026-11-29): the cuBLASLt pair only (probe cublasLtMatmul vs torch.matmul
# on preferred_blas_library('cublaslt'), both 64 MiB workspace, one cuBLAS build), timed FIRST
# (phase A, 13 alternating passes), torch's kernel names with torch.profiler AFTER the timing
# (phase B), then 12 shapes timed again after the profiler (phase C: does it slow torch down?).
# Run 5 (validation/runs/run05-honesty/run.sh) had profiled torch before timing. Outputs in $OUT.
# Run from the folder holding probe/ and validation/.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PASSES=${PASSES:-13}; DEADLINE=${DEADLINE:-105}
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'default blas', torch.backends.cuda.preferred_blas_library())"
  ls -l /usr/local/cuda/lib64/libcublas*.so.* 2>&1; } > "$OUT/env.txt" 2>&1
probe/build.sh /tmp/probe > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "== built ($(( $(date +%s) - t0 )) s)"
timeout 300 python3 validation/gemm_torch.py probe/results/h200-probe.toml "$OUT/h200_gemm_lt_pair.csv" \
  --probe /tmp/probe --passes "$PASSES" --dtype bf16 --sides lt --deadline "$DEADLINE" --recheck 12 > "$OUT/honesty6.log" 2>&1
rc=$?
grep -E "^(gemm honesty|recheck|torch.profiler|#)" "$OUT/honesty6.log" | cut -c1-330
[ $rc -ne 0 ] && tail -30 "$OUT/honesty6.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/env.txt" 2>&1
echo "== done rc=$rc ($(( $(date +%s) - t0 )) s)"
