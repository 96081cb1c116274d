#!/usr/bin/env bash
# Run 31 entry point (repo root): OUT=dir bash validation/runs/run31-fa2-b2b/run.sh
# FlashAttention-2 (SDPA's FLASH_ATTENTION backend) back to back, run 22's shape set, then cuDNN's as the
# control of run 22 (same script, same shapes). Output packed into $OUT/run31.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}; R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())"; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$R/clocks.csv" 2>/dev/null &
smi=$!
timeout 300 python3 validation/attention_sdpa.py "$R/sdpa_b2b_fa2.toml" --back-to-back "${LOOP:-5}" --backend flash 2>&1 | tee "$R/sdpa_b2b_fa2.log"
timeout 200 python3 validation/attention_sdpa.py "$R/sdpa_b2b_cudnn.toml" --back-to-back "${LOOP:-5}" --backend cudnn 2>&1 | tee "$R/sdpa_b2b_cudnn.log"
kill $smi 2>/dev/null
tar czf "$OUT/run31.tgz" -C "$R" .
