#!/usr/bin/env bash
# Run 54 entry point (repo root): OUT=dir bash validation/runs/run54-h100-calibration/run.sh
# The shipped Hopper calibration's measurements, made on an H100 SXM (until now every Hopper number came
# from an H200 and was moved to the H100 by the ratio of datasheet HBM bandwidths): run 1's probe command
# (GEMM grid + model shapes, materialised attention, memory, launch), run 1's SDPA singles, run 4's
# kernel_bw.py (memory families), run 22's cuDNN attention back to back, run 31's FlashAttention-2 back to
# back, and run 40's capped-state workloads (a Llama-3-70B TP8 layer forward, its fc1 GEMM) for the state a
# training step runs in. nvidia-smi every 100 ms throughout.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
ph() { echo "$(( $(date +%s) - t0 )) $1" >> "$R/phases.txt"; }
{ date -u; nvidia-smi; nvidia-smi --query-gpu=serial,vbios_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv;
  nvcc --version | tail -2; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; nproc; } > "$R/env.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F --format=csv,noheader,nounits -lms 100 > "$R/clocks.csv" 2>/dev/null &
smi=$!
ph build
probe/build.sh /tmp/probe > "$R/probe_build.log" 2>&1 || { tail -20 "$R/probe_build.log"; exit 1; }
ph probe
timeout 200 /tmp/probe --out "$R/h100-probe.toml" --gemm-grid \
  --model name=s0.5b,hidden=1536,ffn=4096,heads=12,kv_heads=4,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s1.3b,hidden=2048,ffn=5632,heads=16,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s3b,hidden=3072,ffn=8192,heads=24,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1 \
  --model name=s7b-8L,hidden=4096,ffn=14336,heads=32,kv_heads=8,vocab=128256,seq=4096,mbs=1,tp=1 \
  --model name=llama2-70b-tp8,hidden=8192,ffn=28672,heads=64,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=8 \
  --scenario probe/examples/llama3-8b-tp2.toml > "$R/probe.log" 2>&1 || echo "probe rc=$?" | tee -a "$R/probe.log"
ph sdpa
timeout 90 python3 validation/attention_sdpa.py "$R/sdpa.toml" > "$R/sdpa.log" 2>&1 || echo "sdpa rc=$?" | tee -a "$R/sdpa.log"
ph kernel_bw
timeout 90 python3 validation/kernel_bw.py "$R/kernel_bw.toml" > "$R/kernel_bw.log" 2>&1 || echo "kernel_bw rc=$?" | tee -a "$R/kernel_bw.log"
ph jitter
timeout 120 python3 validation/runs/run40-interval-jitter/jitter.py "$R/jitter" --duration 20 --warmup 15 > "$R/jitter.log" 2>&1 || echo "jitter rc=$?" | tee -a "$R/jitter.log"
python3 validation/runs/run40-interval-jitter/slowest_of_n.py "$R/jitter" layer70b_tp8 > "$R/slowest_of_n.toml" 2>&1
gzip -f "$R"/jitter/intervals_*.csv 2>/dev/null
ph sdpa_b2b_cudnn
timeout 170 python3 validation/attention_sdpa.py "$R/sdpa_b2b_cudnn.toml" --back-to-back 5 --backend cudnn > "$R/sdpa_b2b_cudnn.log" 2>&1 || echo "b2b cudnn rc=$?" | tee -a "$R/sdpa_b2b_cudnn.log"
ph sdpa_b2b_fa2
timeout 200 python3 validation/attention_sdpa.py "$R/sdpa_b2b_fa2.toml" --back-to-back 5 --backend flash > "$R/sdpa_b2b_fa2.log" 2>&1 || echo "b2b fa2 rc=$?" | tee -a "$R/sdpa_b2b_fa2.log"
ph end
kill $smi 2>/dev/null
tail -2 "$R/probe.log"; cat "$R/phases.txt"; cat "$R/jitter/summary.txt" 2>/dev/null | grep -E "units, mean|^ +1 "
grep -E "sm_clock|nvidia_smi_clocks|seconds_" "$R/h100-probe.toml"
tar czf "$OUT/run54.tgz" -C "$R" .
