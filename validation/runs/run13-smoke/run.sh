#!/usr/bin/env bash
# Runs every device script of validation/ once on a tiny input (about a minute on the H200), to check
# that they still run after a change to them; the numbers are not results. Outputs in $OUT/smoke.
# Run from the folder holding probe/ and validation/.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}/smoke; mkdir -p "$OUT"
fail=0
run() { local name=$1; shift; echo "== $name"; if ! timeout 240 "$@" > "$OUT/$name.log" 2>&1; then echo "FAILED: $name"; tail -15 "$OUT/$name.log"; fail=1; fi; }
probe/build.sh /tmp/probe > "$OUT/build.log" 2>&1 && probe/build.sh /tmp/libmfusim_probe.so --lib >> "$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
# a probe file with 3 bf16 and 2 fp8 shapes
python3 - "$OUT/tiny-probe.toml" <<'PY'
import sys
rows = [("bf16", 256, 256, 256), ("bf16", 1024, 1024, 1024), ("bf16", 4096, 4096, 2048), ("fp8_e4m3", 512, 512, 512),
        ("fp8_e4m3", 4096, 4096, 4096)]
with open(sys.argv[1], "w") as f:
    for dt, m, n, k in rows:
        f.write(f'[[gemm]]\nlabel = "smoke"\ndtype = "{dt}"\nm = {m}\nn = {n}\nk = {k}\n\n')
PY
T="$OUT/tiny-probe.toml"
run gemm_torch python3 validation/gemm_torch.py "$T" "$OUT/gemm_torch.csv" --probe /tmp/probe --passes 1 --sides lt
run gemm_inproc python3 validation/gemm_inproc.py "$T" "$OUT/inproc.csv" --probe /tmp/probe --lib /tmp/libmfusim_probe.so --passes 1
run gemm_ab python3 validation/gemm_inproc.py "$T" "$OUT/ab.csv" --lib /tmp/libmfusim_probe.so --ab 2
run gemm_ab_fp8 python3 validation/gemm_inproc.py "$T" "$OUT/ab_fp8.csv" --lib /tmp/libmfusim_probe.so --ab 2 --dtype fp8_e4m3
run gemm_lt_log env CUBLASLT_LOG_LEVEL=5 python3 validation/gemm_lt_log.py /tmp/libmfusim_probe.so 1024,1024,1024
run gemm_lt_log_fp8 env CUBLASLT_LOG_LEVEL=5 python3 validation/gemm_lt_log.py /tmp/libmfusim_probe.so --fp8 1024,1024,1024
run gemm_context python3 validation/gemm_context.py "$OUT/context.csv" --passes 1 --shapes "1024,1024,1024"
run host_ckpt python3 validation/host_ckpt.py "$OUT/host_ckpt.csv" --steps 1 --passes 1
cd validation
run train_step python3 -c "import train_step as t; print(t.run_config('s0.5b', 512, 1, 1, 1, 1, 1))"
run host_step python3 -c "import sys, host_step as h; h.STEPS, h.PASSES = 1, 1; sys.argv = ['x', '$OUT/host_step.csv']; h.main()"
run kernel_trace python3 -c "import sys, kernel_trace as k; k.CONFIGS = [('s0.5b', 512, 1, 1, 0, 1)]; sys.argv = ['x', '$OUT/kt.csv']; k.main()"
run profile_step python3 -c "import sys, profile_step as p; p.CONFIGS = [('s0.5b', 512, 1, 1, 0, 0)]; sys.argv = ['x', '$OUT/ps.csv']; p.main()"
echo "== smoke done, fail=$fail"
exit $fail
