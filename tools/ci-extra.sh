#!/usr/bin/env bash
# Extra guards called by .ci/run: bounded fuzz runs of the scenario loader and of
# the whole load -> simulate -> report path,
# then (later) the CUDA probe build. Each guard skips with a message when its
# tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
FUZZ_SECONDS=${MFUSIM_FUZZ_SECONDS:-60}

# ---- fuzzing (libFuzzer + ASan + UBSan) ----------------------------------------
# fuzz_loader: the config/ loader alone; fuzz_simulate: load -> simulate -> text
# and JSON reports, for scenarios of bounded size. Inputs up to 64 KiB (the
# deep-nesting and long-key defects need more than a few KiB to show).
if command -v clang++ >/dev/null 2>&1; then
  echo "--- fuzz: building with clang into build-fuzz"
  cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DMFUSIM_FUZZ=ON -DMFUSIM_PROBE=OFF -DMFUSIM_BENCH=OFF >/dev/null
  cmake --build build-fuzz -j "$JOBS" --target fuzz_loader fuzz_simulate
  corpus=build-fuzz/fuzz-corpus
  mkdir -p "$corpus"
  for f in scenarios/*.toml tests/bad_input/*.toml tests/config/*.toml; do
    [ -f "$f" ] && cp "$f" "$corpus/"
  done
  for target in fuzz_loader fuzz_simulate; do
    echo "--- $target: ${FUZZ_SECONDS}s"
    build-fuzz/fuzz/$target -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
          -artifact_prefix=build-fuzz/$target- "$corpus"
  done
else
  echo "--- fuzz: clang++ not found, fuzzing skipped"
fi

# ---- probe: CUDA build (nvcc) --------------------------------------------------
# The README's test command builds the probe whenever nvcc is found (top-level
# CMakeLists.txt); check it was built, for Hopper (sm_90a) plus portable PTX.
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -n "$NVCC" ]; then
  echo "--- probe: built with $NVCC"
  test -x build/probe/probe || { echo "error: nvcc is present but build/probe/probe was not built" >&2; exit 1; }
  test -f build/probe/libmfusim_probe.so || { echo "error: nvcc is present but build/probe/libmfusim_probe.so was not built" >&2; exit 1; }
  nm -D --defined-only build/probe/libmfusim_probe.so | grep -q mfusim_probe_gemm_time ||
    { echo "error: libmfusim_probe.so does not export mfusim_probe_gemm_time" >&2; exit 1; }
  CUOBJDUMP="$(dirname "$NVCC")/cuobjdump"
  if [ -x "$CUOBJDUMP" ]; then
    "$CUOBJDUMP" --list-elf build/probe/probe | grep -q sm_90a || { echo "error: probe has no sm_90a code" >&2; exit 1; }
    "$CUOBJDUMP" --list-ptx build/probe/probe | grep -q ptx || { echo "error: probe has no portable PTX" >&2; exit 1; }
    echo "--- probe: sm_90a machine code and PTX present"
  fi
else
  echo "--- probe: nvcc not found, probe build skipped"
fi
