#!/bin/bash
# Run 51 on the device: the fused attention timed as cuDNN frontend's benchmark times it and back to back.
set -e
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > "$OUT/gpu.csv"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 500 > "$OUT/smi.csv" &
SMI=$!
python3 validation/runs/run51-sdpa-method/sdpa_method.py "$OUT" 2>&1 | tee "$OUT/log.txt"
kill $SMI || true
