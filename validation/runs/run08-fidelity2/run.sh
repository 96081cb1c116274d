#!/usr/bin/env bash
# Run 8 (fidelity2, issue #6): (1) every training step again, 3 interleaved passes, with every thread
# of the process bound to one CPU core and 1 torch thread; the host-bound rows also measured with
# the affinity reset to all CPUs, alternately before / after the pinned run (does the host's
# fast/slow switching disappear when pinned?); (2) every GPU kernel of one step, with its launching
# op and shapes, for 7 configurations (kernel_trace.py). Run from the folder holding validation/.
# Outputs in $OUT: env.txt, all.log, kernel_trace.csv.gz, h200_steps_pinned.csv (+ .passes.csv, .free.csv)
set -uo pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
log() { tee -a "$OUT/all.log"; }
t0=$(date +%s)
{ date -u; nvidia-smi; python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'; nproc; lscpu; cat /proc/cmdline; grep -i mhz /proc/cpuinfo | sort | uniq -c; } > "$OUT/env.txt" 2>&1
echo "== kernel_trace" | log
timeout 110 python3 validation/kernel_trace.py "$OUT/kernel_trace.csv" 2>&1 | log
gzip -9 "$OUT/kernel_trace.csv"
el=$(( $(date +%s) - t0 )); left=$(( ${BUDGET_S:-430} - el - 25 ))
echo "== train, pinned to cpu ${PIN:-3}, 3 interleaved passes, host-bound rows also free ($el s; budget $left s)" | log
timeout $(( left + 20 )) python3 validation/train_step.py "$OUT/h200_steps_pinned.csv" --passes 3 --steps 6 \
  --pin ${PIN:-3} --compare-free --no-layer-alone --budget-s $left 2>&1 | log
echo "== done ($(( $(date +%s) - t0 )) s)" | log
