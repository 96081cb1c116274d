#!/usr/bin/env python3
"""Run 30: the HBM rate fused memory-bound kernels reach, against a plain copy of the same bytes (one H200).

DeepSeek's published F&B pair runs its memory-bound kernels (fused 1x128 / 128x1 quantisation, RMSNorm,
SwiGLU, rotary on a slice, the permutations) at about 1 / 1.33 of the cost model's price, which is their
bytes at the copy kernel's rate (docs/moe-dualpipe.md "The F&B pair class by class"). What does a good
fused kernel reach? Each op below is written in torch and compiled by torch.compile (Triton, static shapes, the
default mode, dynamic=False and a fresh compile per shape: run 30a's first call let torch.compile recompile
later shapes as dynamic kernels), timed as CUDA-graph replays of 20 calls (run 30a timed single eager calls,
whose host dispatch bound the small kernels), medians of 15 replays, inputs rotated over 3 buffers (each larger than a third of the 60 MiB L2, so no call reads
another's data from L2). Bytes: the minimum HBM traffic (inputs read once, outputs written once).
Output: OUTDIR/fused.csv: op, shape, bytes, median_us, p10_us, p90_us, gbs, copy_gbs (torch copy_ of the
same bytes: read bytes/2 and write bytes/2), fraction.
usage: python3 fused.py OUTDIR
"""
import csv
import statistics
import sys

import torch

dev = "cuda"
E4M3 = torch.float8_e4m3fn
rows = []


def timeit(fn, args_list, n=15, warm=3, calls=20):
    """Median, p10, p90 microseconds per call: CUDA-graph replays of `calls` calls (inputs rotated)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(warm):
            fn(*args_list[i % len(args_list)])
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(*args_list[i % len(args_list)])
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / calls)
    ts.sort()
    return statistics.median(ts), ts[len(ts) // 10], ts[(9 * len(ts)) // 10]


def copy_rate(nbytes):
    n = max(1, int(nbytes // 4))   # bf16 elements for read nbytes/2 + write nbytes/2
    srcs = [torch.randn(n, device=dev, dtype=torch.bfloat16) for _ in range(3)]
    dsts = [torch.empty_like(s) for s in srcs]
    med, _, _ = timeit(lambda s, d: d.copy_(s), list(zip(srcs, dsts)))
    return 4.0 * n / (med * 1e-6) / 1e9


def record(op, shape, nbytes, fn, args_list):
    torch._dynamo.reset()   # a fresh static compile for this shape
    try:
        med, p10, p90 = timeit(fn, args_list)
        gbs = nbytes / (med * 1e-6) / 1e9
        cg = copy_rate(nbytes)
        row = [op, shape, int(nbytes), round(med, 1), round(p10, 1), round(p90, 1), round(gbs), round(cg), round(gbs / cg, 3)]
    except Exception as e:  # noqa: BLE001
        row = [op, shape, int(nbytes), "", "", "", "", "", f"error: {type(e).__name__}: {str(e)[:150]}"]
    rows.append(row)
    print(*row, flush=True)


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def add_rmsnorm(x, r, w):
    s = x + r
    sf = s.float()
    return s, (sf * torch.rsqrt(sf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def swiglu(gu):
    g, u = gu.chunk(2, dim=-1)
    return torch.nn.functional.silu(g) * u


def quant_1x128(x):
    t, h = x.shape
    g = x.float().view(t, h // 128, 128)
    s = g.abs().amax(-1, keepdim=True).clamp(min=1e-4) / 448.0
    return (g / s).to(E4M3).view(t, h), s.squeeze(-1)


def quant_128x1_t(x):
    t, h = x.shape
    g = x.float().t().reshape(h, t // 128, 128)
    s = g.abs().amax(-1, keepdim=True).clamp(min=1e-4) / 448.0
    return (g / s).to(E4M3).reshape(h, t), s.squeeze(-1)


def rope_slice(q, cos, sin):
    x = q[..., 128:].float()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)
    return torch.cat((q[..., :128], out.to(q.dtype)), -1)


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    bf = torch.bfloat16
    for t, h in ((4096, 7168), (8192, 8192)):
        xs = [torch.randn(t, h, device=dev, dtype=bf) for _ in range(3)]
        w = torch.randn(h, device=dev, dtype=bf)
        f_rms = torch.compile(rmsnorm, dynamic=False)
        f_add = torch.compile(add_rmsnorm, dynamic=False)
        f_q = torch.compile(quant_1x128, dynamic=False)
        f_qt = torch.compile(quant_128x1_t, dynamic=False)
        record("rmsnorm_fwd", f"{t}x{h}", 4 * t * h, lambda x: f_rms(x, w), [(x,) for x in xs])
        rs = [torch.randn(t, h, device=dev, dtype=bf) for _ in range(3)]
        record("add_rmsnorm_fwd", f"{t}x{h}", 8 * t * h, lambda x, r: f_add(x, r, w), list(zip(xs, rs)))
        record("quant_1x128", f"{t}x{h}", t * h * (2 + 1 + 4 / 128), f_q, [(x,) for x in xs])
        record("quant_128x1_transposed", f"{t}x{h}", t * h * (2 + 1 + 4 / 128), f_qt, [(x,) for x in xs])
        del xs, rs
    for t, f in ((4096, 2048), (32768, 2048), (8192, 28672)):
        gus = [torch.randn(t, 2 * f, device=dev, dtype=bf) for _ in range(3)]
        record("swiglu_fwd", f"{t}x2x{f}", 6 * t * f, torch.compile(swiglu, dynamic=False), [(g,) for g in gus])
        del gus
    for t, h in ((32768, 2048),):
        xs = [torch.randn(t, h, device=dev, dtype=bf) for _ in range(3)]
        record("quant_1x128", f"{t}x{h}", t * h * (2 + 1 + 4 / 128), torch.compile(quant_1x128, dynamic=False),
               [(x,) for x in xs])
        del xs
    qs = [torch.randn(4096, 128, 192, device=dev, dtype=bf) for _ in range(3)]
    cos = torch.randn(4096, 1, 32, device=dev, dtype=torch.float32)
    sin = torch.randn(4096, 1, 32, device=dev, dtype=torch.float32)
    # the rotary part read and written (the kernel also copies the 128 pass-through dims: counted)
    record("rope_slice_cat", "4096x128x192 (rope on [128:192])", 4096 * 128 * 192 * 2 * 2, lambda q, f=torch.compile(rope_slice, dynamic=False): f(q, cos, sin),
           [(q,) for q in qs])
    with open(f"{out}/fused.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["op", "shape", "bytes", "median_us", "p10_us", "p90_us", "gbs", "copy_gbs", "fraction"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
