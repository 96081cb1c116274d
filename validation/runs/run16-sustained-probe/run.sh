#!/usr/bin/env bash
# Run 16 entry point (from the repo root): OUT=dir bash validation/runs/run16-sustained-probe/run.sh
# The shipped calibration's measurements again (run 1's probe command, run 2's SDPA shapes), this
# time at the sustained power state (probe --sustained, attention_sdpa.py --sustained), plus the
# run-15 layer shapes; nvidia-smi every 100 ms throughout.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
HEAT=${HEAT_MS:-20}
nvidia-smi > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$R/clocks.csv" 2>/dev/null &
smi=$!
probe/build.sh /tmp/probe > "$R/probe_build.log" 2>&1 || { tail -20 "$R/probe_build.log"; exit 1; }
R15='r15:4096,6144,4096;4096,4096,6144;6144,4096,4096;4096,4096,4096;4096,28672,4096;4096,4096,28672;28672,4096,4096;4096,4096,14336;4096,14336,4096;14336,4096,4096;16384,2048,6144;16384,6144,2048;6144,2048,16384;16384,6144,1536;16384,1536,6144;1536,6144,16384;16384,6144,6144;6144,6144,16384;4096,2304,16384;4096,16384,2304;16384,2304,4096;4096,16384,2048;4096,2048,16384;2048,16384,4096;4096,13312,16384;4096,16384,13312;16384,13312,4096;4096,16384,6656;4096,6656,16384;6656,16384,4096'
echo "$(date +%s.%N) probe" >> "$R/phases.txt"
timeout 400 /tmp/probe --out "$R/h200-probe-sustained.toml" --sustained "$HEAT" --gemm-grid \
  --model name=s0.5b,hidden=1536,ffn=4096,heads=12,kv_heads=4,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s1.3b,hidden=2048,ffn=5632,heads=16,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s3b,hidden=3072,ffn=8192,heads=24,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s7b-8L,hidden=4096,ffn=14336,heads=32,kv_heads=8,vocab=128256,seq=4096,mbs=1,tp=1 \
  --model name=llama2-70b-tp8,hidden=8192,ffn=28672,heads=64,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=8 \
  --scenario probe/examples/llama3-8b-tp2.toml --shapes "$R15" > "$R/probe.log" 2>&1 || echo "probe rc=$?" | tee -a "$R/probe.log"
echo "$(date +%s.%N) sdpa" >> "$R/phases.txt"
timeout 150 python3 validation/attention_sdpa.py "$R/sdpa-sustained.toml" --sustained "$HEAT" > "$R/sdpa.log" 2>&1 || echo "sdpa rc=$?" | tee -a "$R/sdpa.log"
echo "$(date +%s.%N) end" >> "$R/phases.txt"
kill $smi 2>/dev/null
tail -3 "$R/probe.log"; tail -3 "$R/sdpa.log"
grep -E "sm_clock|power_gemm|seconds_" "$R/h200-probe-sustained.toml"
