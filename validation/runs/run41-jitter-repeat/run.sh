#!/usr/bin/env bash
# Run 41 entry point (repo root): OUT=dir bash validation/runs/run41-jitter-repeat/run.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
{ date -u; nvidia-smi; nvidia-smi -q | grep -iE "serial|uuid|board part|vbios|power limit|product name"; } > "$OUT/nvidia-smi-q.txt" 2>&1
F=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$F --format=csv -lms 100 > "$OUT/clocks.csv" 2>/dev/null &
S=$!
timeout 400 python3 "$HERE/jitter2.py" "$OUT" --bf16 120 --fp8 40 --warmup 15 2>&1 | tee "$OUT/log.txt"
kill $S 2>/dev/null
python3 "$HERE/../run40-interval-jitter/slowest_of_n.py" "$OUT" layer70b_tp8 > "$OUT/slowest_of_n_bf16.toml" 2>&1
python3 "$HERE/../run40-interval-jitter/slowest_of_n.py" "$OUT" layer70b_tp8_fp8 > "$OUT/slowest_of_n_fp8.toml" 2>&1
