"""Run 53: PyTorch's RMSNorm / LayerNorm on this H200 by cuDNN frontend's published norm-benchmark method.

cuDNN frontend's norm benchmark (github.com/NVIDIA/cudnn-frontend benchmark/norms/benchmark_single_norm.py at
df73764; its H200, GB200 and GB300 results are validation/cudnn_norms) carries the shipped H200 calibration's
memory-bound fits to the Blackwell parts by the same kernels' rate ratio. This run times the same PyTorch kernels
(eager and torch.compile) on this H200 by that method, so that the published H200 table can be compared with the
H200 the probe measured: if they agree, the ratio carries from our H200, not only from NVIDIA's.

Method, as the published script's (our own code): x of shape (N, C, 1, 1) bf16, scale (1, C, 1, 1) (and a bias for
LayerNorm), fresh random tensors each iteration, a 256 MB buffer zeroed before each pass (the L2 flushed), the pass
under torch.profiler inside record_function("norm.forward" / "norm.backward"), its device time; 25 iterations,
the first 5 dropped, the median of the last 15 of the remaining 20 (the script's forward_times[5:]); bytes as the
script counts them (compute_bandwidth_bytes). Writes $OUT/norms.csv, $OUT/env.txt, $OUT/clocks.csv.
"""
import csv, os, subprocess, sys, time
import numpy as np
import torch
from torch.profiler import profile, record_function, ProfilerActivity

OUT = os.environ.get("OUT", ".")
dev = torch.device("cuda")
EPS = 1e-5

# (name, norm type, N, C, bias): the published table's shapes from 50 MB up, and two smaller
SHAPES = [
    ("llama3-8b", "rms_norm", 16384, 4096, False),
    ("llama3-70b", "rms_norm", 8192, 8192, False),
    ("llama31-405b", "rms_norm", 4096, 16384, False),
    ("llama4-e16", "rms_norm", 8192, 5120, False),
    ("mixtral-8x22b", "rms_norm", 4096, 6144, False),
    ("gpt3-175b", "layer_norm", 1024, 12288, True),
    ("deepseek-v3-2048x4096", "rms_norm", 2048, 4096, False),
]


def nbytes(kind, N, C, bias, e, mode):
    if mode == "fwd":
        if kind == "rms_norm":
            return (N * C + C) * e + N * C * e + N * 4
        return (N * C + C + (C if bias else 0)) * e + N * C * e + N * 4 + N * 4
    if kind == "rms_norm":
        return (N * C + N * C + C) * e + N * 4 + (N * C + C) * e + (C * e if bias else 0)
    return (N * C + N * C + C) * e + N * 4 + N * 4 + (N * C + C + C) * e


# RUN53_STATIC=1 (the second call, 53b): torch.compile'd calls only, each shape compiled afresh with static shapes
# (torch._dynamo.reset(), dynamic=False), as the published runner's one process per shape compiles them. The first
# call compiled every shape in one process, so from the second shape on Dynamo recompiled with dynamic shapes.
STATIC = os.environ.get("RUN53_STATIC") == "1"


def make_fn(kind, C, compiled):
    if kind == "rms_norm":
        def fn(x, scale, bias):
            return torch.nn.functional.rms_norm(x, (C, 1, 1), weight=scale.squeeze(0), eps=EPS)
    else:
        def fn(x, scale, bias):
            return torch.nn.functional.layer_norm(x, [C, 1, 1], weight=scale.squeeze(0),
                                                  bias=bias.squeeze(0) if bias is not None else None, eps=EPS)
    if compiled and STATIC:
        torch._dynamo.reset()
        return torch.compile(fn, dynamic=False)
    return torch.compile(fn) if compiled else fn


def device_ms(prof, key):
    ev = [i for i in prof.key_averages() if i.key == key]
    if ev:
        return ev[0].device_time / 1000
    return sum(i.device_time for i in prof.key_averages() if i.device_time > 0) / 1000


def bench(name, kind, N, C, bias, backend):
    fn = make_fn(kind, C, backend == "torch_compile")
    flush = torch.empty(256 * 1024 * 1024, device=dev, dtype=torch.int8)
    fwd, bwd = [], []
    for i in range(25):
        x = torch.randn(N, C, 1, 1, dtype=torch.bfloat16, device=dev, requires_grad=True)
        s = torch.randn(1, C, 1, 1, dtype=torch.bfloat16, device=dev, requires_grad=True)
        b = torch.randn(1, C, 1, 1, dtype=torch.bfloat16, device=dev, requires_grad=True) if bias else None
        flush.zero_()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            with record_function("norm.forward"):
                y = fn(x, s, b)
            torch.cuda.synchronize()
        f = device_ms(prof, "norm.forward")
        flush.zero_()
        dy = torch.randn_like(y)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            with record_function("norm.backward"):
                y.backward(dy)
            torch.cuda.synchronize()
        w = device_ms(prof, "norm.backward")
        if i >= 5:
            fwd.append(f)
            bwd.append(w)
        time.sleep(min(f / 100, 1.0))
    fm, bm = float(np.median(fwd[5:])), float(np.median(bwd[5:]))
    return fm, bm, nbytes(kind, N, C, bias, 2, "fwd") / (fm * 1e-3) / 1e9, nbytes(kind, N, C, bias, 2, "bwd") / (bm * 1e-3) / 1e9


def main():
    clocks = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu",
                               "--format=csv", "-lms", "200"], stdout=open(os.path.join(OUT, "clocks_static.csv" if STATIC else "clocks.csv"), "w"))
    with open(os.path.join(OUT, "env_static.txt" if STATIC else "env.txt"), "w") as f:
        f.write(f"torch {torch.__version__} cuda {torch.version.cuda} device {torch.cuda.get_device_name(0)}\n")
        f.write(subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout)
    rows = []
    try:
        for name, kind, N, C, bias in SHAPES:
            for backend in (("torch_compile",) if STATIC else ("pytorch", "torch_compile")):
                t0 = time.time()
                fm, bm, fg, bg = bench(name, kind, N, C, bias, backend)
                rows.append([name, kind, backend, N, C, int(bias), f"{fm:.4f}", f"{bm:.4f}", f"{fg:.1f}", f"{bg:.1f}"])
                print(name, backend, f"fwd {fm:.4f} ms {fg:.0f} GB/s  bwd {bm:.4f} ms {bg:.0f} GB/s  ({time.time() - t0:.0f} s)",
                      flush=True)
    finally:
        clocks.terminate()
        with open(os.path.join(OUT, "norms_static.csv" if STATIC else "norms.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["norm_name", "norm_type", "backend", "N", "C", "has_bias", "fwd_time_ms", "bwd_time_ms", "fwd_gbps", "bwd_gbps"])
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
