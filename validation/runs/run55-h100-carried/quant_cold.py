#!/usr/bin/env python3
"""Run 55: DeepSeek-V3's blockwise fp8 quantisation (run 52's fused Triton kernels, 1x128 row groups and 128x1
column groups written transposed) and a plain bf16 copy, with every call on its own input and output buffers,
rotated through at least 256 MB, five times the H100's 50 MB L2, so no call reads what an earlier one left in
the L2 (run 52 repeated one input and could not time the small calls).

usage: python3 quant_cold.py OUTDIR
Writes OUTDIR/quant_cold.csv: kernel (row | col_t | copy), M, K, bytes (the cost model's count: quantisation
2 M K read, M K + 4 M ceil(K / 128) written, models::detail::fp8_quantise; copy 4 M K), sets (buffer sets the
calls rotate through), graph_us (one call per set captured in a CUDA graph, replayed 10 times after a warm
replay: the median replay / sets, device time back to back with no host, the graph's ~0.7 us kernel gap in
it), err (quantisation check: max |dequantised - x| / max |x|).
"""
import csv, math, os, statistics, sys, time
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run52-fp8-blockwise"))
import quant  # noqa: E402  (run 52's kernels)

dev = "cuda"
FP8 = torch.float8_e4m3fn
POOL = 256 << 20


def graph_us(calls, reps=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for fn in calls[:3]:
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for fn in calls:
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
        ts.append(a.elapsed_time(b) * 1e3 / len(calls))
    return statistics.median(ts)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), "triton" if quant.HAVE_TRITON else "no triton", flush=True)
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < 5:   # the clock a training step holds
        a @ a
    torch.cuda.synchronize()
    del a
    rows = []
    for M in (1024, 4096, 16384):
        for K in (512, 1536, 2048, 7168, 16384):
            in_bytes = 2 * M * K
            sets = max(4, min(256, math.ceil(POOL / in_bytes)))
            for kernel in ("row", "col_t", "copy"):
                if kernel != "copy" and not quant.HAVE_TRITON:
                    continue
                xs = [torch.randn(M, K, device=dev, dtype=torch.bfloat16) * 3 for _ in range(sets)]
                if kernel == "row":
                    qs = [torch.empty(M, K, device=dev, dtype=FP8) for _ in range(sets)]
                    ss = [torch.empty(M, K // 128, device=dev, dtype=torch.float32) for _ in range(sets)]
                    calls = [(lambda x=x, q=q, s=s: quant.triton_row(x, q, s)) for x, q, s in zip(xs, qs, ss)]
                    nbytes = 2 * M * K + M * K + 4 * M * ((K + 127) // 128)
                elif kernel == "col_t":
                    qs = [torch.empty(K, M, device=dev, dtype=FP8) for _ in range(sets)]
                    ss = [torch.empty(K, M // 128, device=dev, dtype=torch.float32) for _ in range(sets)]
                    calls = [(lambda x=x, q=q, s=s: quant.triton_col_t(x, q, s)) for x, q, s in zip(xs, qs, ss)]
                    nbytes = 2 * M * K + M * K + 4 * M * ((K + 127) // 128)
                else:
                    ys = [torch.empty(M, K, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
                    calls = [(lambda x=x, y=y: y.copy_(x)) for x, y in zip(xs, ys)]
                    nbytes = 4 * M * K
                err = ""
                try:
                    calls[0]()
                    torch.cuda.synchronize()
                    if kernel == "row":
                        deq = qs[0].float().view(M, K // 128, 128) * ss[0].unsqueeze(2)
                        err = f"{((deq.view(M, K) - xs[0].float()).abs().max() / xs[0].float().abs().max()).item():.3g}"
                    elif kernel == "col_t":
                        deq = qs[0].float().view(K, M // 128, 128) * ss[0].unsqueeze(2)
                        err = f"{((deq.view(K, M).t() - xs[0].float()).abs().max() / xs[0].float().abs().max()).item():.3g}"
                    gu = graph_us(calls)
                except Exception as e:  # noqa: BLE001
                    print("failed", kernel, M, K, e, flush=True)
                    continue
                r = [kernel, M, K, nbytes, sets, round(gu, 3), err]
                rows.append(r)
                print(*r, f"{nbytes / gu * 1e-3:.0f} GB/s", flush=True)
                del calls, xs
                torch.cuda.empty_cache()
    with open(f"{out}/quant_cold.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "M", "K", "bytes", "sets", "graph_us", "err"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
