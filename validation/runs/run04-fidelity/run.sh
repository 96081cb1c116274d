#!/usr/bin/env bash
# Device call for the fidelity mechanisms (docs/fidelity.md, validation/runlog.md run 4): kernel-family
# bandwidths at the runs' sizes, the host issue cost at a tiny shape, and the training steps
# again with several interleaved passes. Run from the folder holding validation/.
# Outputs in $OUT: env.txt, all.log, kernel_bw.toml, host_bench.csv, h200_steps_passes.csv
# (+ .passes.csv).  BUDGET_S (default 560): seconds for the whole command.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
log() { tee -a "$OUT/all.log"; }
t0=$(date +%s)
{ date -u; nvidia-smi; python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'; nproc; lscpu | head -20; } > "$OUT/env.txt" 2>&1
echo "== kernel_bw" | log
timeout 150 python3 validation/kernel_bw.py "$OUT/kernel_bw.toml" 2>&1 | log
echo "== host_bench ($(( $(date +%s) - t0 )) s)" | log
timeout 120 python3 validation/host_bench.py "$OUT/host_bench.csv" 2>&1 | log
el=$(( $(date +%s) - t0 )); left=$(( ${BUDGET_S:-560} - el - 30 ))
echo "== train, 3 interleaved passes ($el s; budget $left s)" | log
timeout $(( left + 25 )) python3 validation/train_step.py "$OUT/h200_steps_passes.csv" --passes 3 --steps 6 --budget-s $left 2>&1 | log
echo "== done ($(( $(date +%s) - t0 )) s)" | log
