#!/usr/bin/env bash
# Run 34 entry point (repo root): OUT=dir bash validation/runs/run34-loss-memory/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date; nvidia-smi; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$R/env.txt" 2>&1
for shape in "1 8192 4096 128256" "2 8192 4096 128256" "2 4096 4096 32000"; do
  for loss in eager_fp32 eager_bf16 compiled_fp32 chunked8; do
    for mode in leaf head; do
      timeout 240 python3 "$here/loss_memory.py" "$R" $loss $mode $shape > "$R/log-$loss-$mode-${shape// /x}.txt" 2>&1 \
        || { echo "FAILED $loss $mode $shape"; tail -5 "$R/log-$loss-$mode-${shape// /x}.txt"; }
    done
  done
done
python3 - "$R/summary.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{'loss':14} {'mode':5} {'shape':22} {'fwd':>6} {'after':>6} {'bwd':>6} {'end':>6}  bytes/logit   s")
for r in rows:
    shape = f"{r['mbs']}x{r['seq']}x{r['hidden']}x{r['vocab']}"
    print(f"{r['loss']:14} {r['mode']:5} {shape:22} {float(r['fwd_peak_bpl']):6.2f} {float(r['after_fwd_bpl']):6.2f}"
          f" {float(r['bwd_peak_bpl']):6.2f} {float(r['after_bwd_bpl']):6.2f}  {r['seconds']}")
PY
cat "$R"/log-* > "$R/all-logs.txt"; rm -f "$R"/log-*
