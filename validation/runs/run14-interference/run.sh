#!/usr/bin/env bash
# Run 14 on one H200: interference, grouped expert GEMMs, attention variants, fp8 recipe overheads.
# Run from the repository root: OUT=dir bash validation/runs/run14-interference/run.sh [quick]
# Everything is written under $OUT/r and packed into $OUT/run14.tgz after each part (the device tool
# returns at most 8 files). Each part runs under its own deadline and timeout; total <= ~480 s.
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
Q=""; [ "${1:-}" = quick ] && Q=--quick
T0=$(date +%s)
pack() { tar czf "$OUT/run14.tgz" -C "$R" . 2>/dev/null; }
{
  date -u; hostname; uname -r
  nvidia-smi; nvidia-smi -q -d CLOCK,POWER,PERFORMANCE | head -120
  nvcc --version | tail -2
  python3 - <<'PY'
import torch, sys
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)
p = torch.cuda.get_device_properties(0)
print(p.name, p.multi_processor_count, "SMs", round(p.total_memory / 2**30, 1), "GiB", "L2", getattr(p, "L2_cache_size", "?"))
print("torch._grouped_mm:", hasattr(torch, "_grouped_mm"), " torch._scaled_grouped_mm:", hasattr(torch, "_scaled_grouped_mm"))
print("cublas", torch.backends.cuda.preferred_blas_library(), "cudnn", torch.backends.cudnn.version())
for m in ("cupy", "transformer_engine", "triton", "flash_attn"):
    try:
        mod = __import__(m); print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "absent:", type(e).__name__, str(e)[:100])
PY
} > "$R/env.txt" 2>&1
grep -E "torch|cupy|transformer_engine|grouped|SMs" "$R/env.txt"
# clock / power sampler (100 ms) for the whole run
F=timestamp,clocks.sm,clocks.mem,power.draw,power.draw.instant,clocks_throttle_reasons.active,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$F --format=csv,noheader >/dev/null 2>&1 || F=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$F --format=csv -lms 100 > "$R/clocks.csv" 2>"$R/clocks.err" &
SAMPLER=$!
part() {  # name deadline_s timeout_s script
  local name=$1 dl=$2 to=$3 script=$4
  echo "== $name $(date -u +%H:%M:%S) (elapsed $(( $(date +%s) - T0 )) s)"
  echo "$name start $(date +%s.%N)" >> "$R/phases.txt"
  timeout "$to" python3 "$HERE/$script" "$R" --deadline "$dl" $Q > "$R/$name.log" 2>&1
  echo "$name rc=$? end $(date +%s.%N)" >> "$R/phases.txt"
  tail -60 "$R/$name.log"
  pack
}
PARTS=${PARTS:-"interference grouped_gemm attention fp8"}  # run 14b: PARTS=interference
for p in $PARTS; do
  case $p in
    interference) part interference 190 240 interference.py ;;
    grouped_gemm) part grouped_gemm 150 180 grouped_gemm.py ;;
    attention) part attention 60 90 attention_variants.py ;;
    fp8) part fp8 35 60 fp8_overheads.py ;;
  esac
done
kill "$SAMPLER" 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"; cat "$R/phases.txt"
pack; ls -la "$OUT"
