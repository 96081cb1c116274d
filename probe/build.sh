#!/usr/bin/env bash
# Builds the probe with nvcc alone (no CMake), as done on the GPU machine.
# Usage: probe/build.sh [OUT_BINARY] [--lib]   -- finds cuBLASLt and NCCL in the CUDA
# toolkit, /usr, or the pip wheels (nvidia-cublas, nvidia-nccl-cu13).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/probe}
# The shared harness and the GEMM family, then the executable's families and command line, or
# (--lib) the shared library's entry points (lib.cu, validation/gemm_inproc.py).
srcs=("$here/harness.cu" "$here/gemm.cu" "$here/shapes.cu" "$here/attention.cu" "$here/memory.cu"
      "$here/collectives.cu" "$here/probe.cu")
lib=()
[ "${2:-}" = "--lib" ] && { lib=(-shared -Xcompiler -fPIC); srcs=("$here/harness.cu" "$here/gemm.cu" "$here/lib.cu"); }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda=$(dirname "$(dirname "$NVCC")")
flags=(-std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90)
libs=(-lcublasLt -lcublas)
inc=(); ldir=()
pyinc() { python3 -c "import $1 as m;print(list(m.__path__)[0])" 2>/dev/null || true; }
if [ ! -e "$cuda/lib64/libcublasLt.so" ] && [ ! -e /usr/lib/x86_64-linux-gnu/libcublasLt.so ]; then
  d=$(pyinc nvidia.cublas); [ -n "$d" ] && { inc+=(-I"$d/include"); ldir+=(-L"$d/lib" -Xlinker -rpath="$d/lib"); libs=(-l:libcublasLt.so.13 -l:libcublas.so.13); }
fi
nccl_inc=""
for d in "$cuda/include" /usr/include; do [ -e "$d/nccl.h" ] && nccl_inc=$d; done
if [ -n "$nccl_inc" ]; then
  flags+=(-DMFUSIM_HAVE_NCCL); libs+=(-lnccl)
else
  d=$(pyinc nvidia.nccl)
  if [ -n "$d" ] && [ -e "$d/include/nccl.h" ]; then
    flags+=(-DMFUSIM_HAVE_NCCL); inc+=(-I"$d/include"); ldir+=(-L"$d/lib" -Xlinker -rpath="$d/lib"); libs+=(-l:libnccl.so.2)
  else
    echo "build.sh: nccl.h not found: building without collectives" >&2
  fi
fi
set -x
"$NVCC" "${flags[@]}" "${lib[@]}" "${inc[@]}" "${srcs[@]}" -o "$out" "${ldir[@]}" "${libs[@]}"
