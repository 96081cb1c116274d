#!/usr/bin/env bash
# One device call: build the probe, run it, fused attention through SDPA, the
# torch GEMM honesty check, and the training-step sweep. Everything lands in
# $OUT (at most 8 files come back): all.log, h200-probe.toml (probe + SDPA
# fragment merged), sdpa.toml, gemm_torch.csv, h200_steps.csv, env.txt.
# Run from the folder holding probe/ and validation/:  bash validation/runs/run01-full/run.sh [quick]
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
Q=${1:-}
log() { tee -a "$OUT/all.log"; }
t0=$(date +%s)
{ date -u; nvidia-smi; nvcc --version; python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'; nproc; } > "$OUT/env.txt" 2>&1
M70="name=llama2-70b-tp8,hidden=8192,ffn=28672,heads=64,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=8"
M05="name=s0.5b,hidden=1536,ffn=4096,heads=12,kv_heads=4,vocab=32000,seq=4096,mbs=1,tp=1"
M13="name=s1.3b,hidden=2048,ffn=5632,heads=16,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1"
M3="name=s3b,hidden=3072,ffn=8192,heads=24,kv_heads=8,vocab=32000,seq=4096,mbs=1,tp=1"
M7="name=s7b-8L,hidden=4096,ffn=14336,heads=32,kv_heads=8,vocab=128256,seq=4096,mbs=1,tp=1"
echo "== build" | log
probe/build.sh /tmp/probe 2>&1 | log
echo "== probe ($(( $(date +%s) - t0 )) s)" | log
qa=""; [ "$Q" = quick ] && qa="--quick"
timeout 200 /tmp/probe $qa --out "$OUT/h200-probe.toml" --gemm-grid --model "$M05" --model "$M13" --model "$M3" \
  --model "$M7" --model "$M70" --scenario probe/examples/llama3-8b-tp2.toml 2>&1 | log
echo "== sdpa ($(( $(date +%s) - t0 )) s)" | log
timeout 90 python3 validation/attention_sdpa.py "$OUT/sdpa.toml" $qa 2>&1 | log
[ -s "$OUT/sdpa.toml" ] && [ -s "$OUT/h200-probe.toml" ] && cat "$OUT/sdpa.toml" >> "$OUT/h200-probe.toml"
echo "== gemm honesty ($(( $(date +%s) - t0 )) s)" | log
[ -s "$OUT/h200-probe.toml" ] && timeout 120 python3 validation/gemm_torch.py "$OUT/h200-probe.toml" "$OUT/gemm_torch.csv" --probe /tmp/probe 2>&1 | log
el=$(( $(date +%s) - t0 )); left=$(( ${BUDGET_S:-560} - el - 40 ))
echo "== train ($el s; budget $left s)" | log
timeout $(( left + 60 )) python3 validation/train_step.py "$OUT/h200_steps.csv" --budget-s $left $qa 2>&1 | log
echo "== done ($(( $(date +%s) - t0 )) s)" | log
