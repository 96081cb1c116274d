#!/usr/bin/env python3
"""Run 52: DeepSeek-V3's blockwise fp8 quantisation kernels (1x128 row groups; 128x1 column groups written
transposed) as fused Triton kernels, and as plain torch ops, on one H200, at the shapes of DeepSeek-V3's layers
(tokens 1k-32k x widths 512-16384: MLA's 512 / 1536, the experts' 2048, the hidden 7168, the attention output
16384).

usage: python3 quant.py OUTDIR
Writes OUTDIR/quant.csv: kernel (row | col_t), impl (triton | torch), M, K, bytes (the cost model's count for
models::detail::fp8_quantise: 2 M K read, M K + 4 M ceil(K / 128) written), graph_us (20 calls captured in a
CUDA graph, replayed 20 times, the median replay / 20: the kernels' device time back to back, no host), event_us
(median of 50 single calls between CUDA events), err (max |dequantised - x| / max |x|, a correctness check).
"""
import csv
import statistics
import sys

import torch

dev = "cuda"
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0

try:
    import triton
    import triton.language as tl
    HAVE_TRITON = True
except Exception as e:  # noqa: BLE001
    print("no triton:", e, flush=True)
    HAVE_TRITON = False

if HAVE_TRITON:
    @triton.jit
    def row_quant_kernel(x_ptr, q_ptr, s_ptr, M, K, BM: tl.constexpr, G: tl.constexpr):
        # one program: BM rows x one 128-wide group; scale per (row, group)
        pid_m = tl.program_id(0)
        pid_g = tl.program_id(1)
        rows = pid_m * BM + tl.arange(0, BM)
        cols = pid_g * G + tl.arange(0, G)
        mask = (rows[:, None] < M) & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-4)
        scale = amax / 448.0
        q = (x / scale[:, None]).to(tl.float8e4nv)
        tl.store(q_ptr + rows[:, None] * K + cols[None, :], q, mask=mask)
        tl.store(s_ptr + rows * tl.cdiv(K, G) + pid_g, scale, mask=rows < M)

    @triton.jit
    def col_quant_t_kernel(x_ptr, q_ptr, s_ptr, M, K, BK: tl.constexpr, G: tl.constexpr):
        # one program: a 128-row group x BK columns; scale per (column, row group); q written as [K, M]
        pid_g = tl.program_id(0)
        pid_k = tl.program_id(1)
        rows = pid_g * G + tl.arange(0, G)
        cols = pid_k * BK + tl.arange(0, BK)
        mask = (rows[:, None] < M) & (cols[None, :] < K)
        x = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-4)
        scale = amax / 448.0
        q = (x / scale[None, :]).to(tl.float8e4nv)
        qt = tl.trans(q)   # [BK, G]
        tl.store(q_ptr + cols[:, None] * M + rows[None, :], qt, mask=(cols[:, None] < K) & (rows[None, :] < M))
        tl.store(s_ptr + cols * tl.cdiv(M, G) + pid_g, scale, mask=cols < K)

    def triton_row(x, q, s):
        M, K = x.shape
        row_quant_kernel[(triton.cdiv(M, 32), triton.cdiv(K, 128))](x, q, s, M, K, BM=32, G=128)

    def triton_col_t(x, q, s):
        M, K = x.shape
        col_quant_t_kernel[(triton.cdiv(M, 128), triton.cdiv(K, 64))](x, q, s, M, K, BK=64, G=128)


def torch_row(x, q, s):
    M, K = x.shape
    xv = x.view(M, K // 128, 128).float()
    amax = xv.abs().amax(dim=2).clamp(min=1e-4)
    s.copy_(amax / FP8_MAX)
    q.copy_((xv / s.unsqueeze(2)).to(FP8).view(M, K))


def torch_col_t(x, q, s):
    M, K = x.shape
    xv = x.view(M // 128, 128, K).float()
    amax = xv.abs().amax(dim=1).clamp(min=1e-4)          # [M/128, K]
    sc = amax / FP8_MAX
    s.copy_(sc.t())                                     # [K, M/128]
    q.copy_((xv / sc.unsqueeze(1)).to(FP8).view(M, K).t())


def graph_us(fn, reps=20, calls=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(ts)


def event_us(fn, n=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), "triton" if HAVE_TRITON else "no triton", flush=True)
    # a 5 s GEMM warm-up: the clock a training step holds
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    import time
    t0 = time.time()
    while time.time() - t0 < 5:
        a @ a
    torch.cuda.synchronize()
    rows = []
    for M in (1024, 4096, 8192, 16384, 32768):
        for K in (512, 1536, 2048, 7168, 16384):
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16) * 3
            nbytes = 2 * M * K + M * K + 4 * M * ((K + 127) // 128)
            impls = [("torch", torch_row, torch_col_t)]
            if HAVE_TRITON:
                impls.insert(0, ("triton", triton_row, triton_col_t))
            for impl, rowf, colf in impls:
                for kernel in ("row", "col_t"):
                    if kernel == "row":
                        q = torch.empty(M, K, device=dev, dtype=FP8)
                        s = torch.empty(M, K // 128, device=dev, dtype=torch.float32)
                        fn = (lambda x=x, q=q, s=s, f=rowf: f(x, q, s))
                    else:
                        q = torch.empty(K, M, device=dev, dtype=FP8)
                        s = torch.empty(K, M // 128, device=dev, dtype=torch.float32)
                        fn = (lambda x=x, q=q, s=s, f=colf: f(x, q, s))
                    try:
                        fn()
                        torch.cuda.synchronize()
                        if kernel == "row":
                            deq = q.float().view(M, K // 128, 128) * s.unsqueeze(2)
                            err = ((deq.view(M, K) - x.float()).abs().max() / x.float().abs().max()).item()
                        else:
                            deq = q.float().view(K, M // 128, 128) * s.unsqueeze(2)
                            err = ((deq.view(K, M).t() - x.float()).abs().max() / x.float().abs().max()).item()
                        gu = graph_us(fn)
                        eu = event_us(fn)
                    except Exception as e:  # noqa: BLE001
                        print("failed", kernel, impl, M, K, e, flush=True)
                        continue
                    r = [kernel, impl, M, K, nbytes, round(gu, 3), round(eu, 3), f"{err:.3g}"]
                    rows.append(r)
                    print(*r, f"{nbytes / gu * 1e-3:.0f} GB/s", flush=True)
            del x
            torch.cuda.empty_cache()
    with open(f"{out}/quant.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "impl", "M", "K", "bytes", "graph_us", "event_us", "err"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
