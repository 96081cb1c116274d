#!/usr/bin/env python3
"""cuBLASLt API trace of torch.matmul's call next to the probe's, shape by shape, in one process
(run 10 follow-up of validation/gemm_inproc.py: the same kernel name, yet the probe's plan ran
2-4% slower than torch's on the same buffers for GEMMs of >= 3 ms and ~1% faster below). Each
call is made once with CUBLASLT_LOG_LEVEL=5 (every cuBLASLt API call with its parameters:
descriptors, preferences, the algorithm's config), so the two calls' heuristic queries and
matmul parameters can be compared line by line. Output: the trace on stdout between
'=== torch M N K' / '=== probe M N K' markers.
Usage: CUBLASLT_LOG_LEVEL=5 gemm_lt_log.py LIBMFUSIM_PROBE.so [--fp8] M,N,K [M,N,K ...]
  --fp8: torch._scaled_mm (per-tensor scales of 1, bf16 out) against the probe's fp8 plan
"""
import ctypes, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_inproc  # noqa: E402  (imports gemm_torch first: the cuBLASLt workspace environment)
import torch  # noqa: E402


def main():
    libpath = sys.argv[1]
    fp8 = "--fp8" in sys.argv
    shapes = [tuple(int(x) for x in a.split(",")) for a in sys.argv[2:] if a != "--fp8"]
    torch.backends.cuda.preferred_blas_library("cublaslt")
    lib, _ = gemm_inproc.load_probe_lib(libpath)
    s = torch.cuda.Stream()
    for m, n, k in shapes:
        x = torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
        w = torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        if fp8:
            x, w = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
            one = torch.ones((), device="cuda", dtype=torch.float32)
        torch.cuda.synchronize()
        print(f"=== torch {m} {n} {k}", flush=True)
        with torch.cuda.stream(s):
            if fp8:
                torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c)
            else:
                torch.matmul(x, w.t(), out=c)
        torch.cuda.synchronize()
        print(f"=== probe {m} {n} {k}", flush=True)
        lib.mfusim_probe_gemm_once(1 if fp8 else 0, m, n, k, x.data_ptr(), w.data_ptr(), c.data_ptr(), ctypes.c_void_p(s.cuda_stream))
        torch.cuda.synchronize()
        print(f"=== end {m} {n} {k}", flush=True)
        del x, w, c


if __name__ == "__main__":
    main()
