#!/usr/bin/env bash
# Run 53 (one H200): PyTorch's norm kernels by cuDNN frontend's published method. OUT=$OUT bash run.sh
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p "$OUT"
python3 norms.py 2>&1 | tee "$OUT/log.txt"
# 53b: the torch.compile'd calls again, each shape compiled with static shapes (RUN53_STATIC=1)
RUN53_STATIC=1 python3 norms.py 2>&1 | tee "$OUT/log_static.txt"
