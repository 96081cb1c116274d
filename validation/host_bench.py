#!/usr/bin/env python3
"""Host (CPU) issue cost of eager PyTorch on the H200 machine, measured where the
GPU has nothing to do: the decoder layer of train_step.py at a tiny shape
(micro-batch 1, seq 128), so every kernel runs in a few microseconds and a
forward or backward takes the time the host needs to issue it.

For each layer variant (fused 0/1, flash 1/0) and the runs' hidden sizes:
  fwd_host_us  host wall time of one layer forward under autocast (input fp32, as in
               the step: the residual stream is fp32), median over `reps`
  bwd_host_us  host wall time of its backward (y.backward(dy): the autograd engine
               issues the kernels and returns when all are queued)
  fwd_kernels / bwd_kernels  CUDA kernels launched (torch.profiler, one extra iteration)
  compiled calls: the torch.compile'd SwiGLU / RoPE regions alone, fwd and bwd host time
  op: a bare eager op (x + y, tiny) for scale
The GPU is checked idle-bound: the same loop synchronised after every iteration
takes no longer than the host-only loop when the kernels are tiny.
Usage: host_bench.py OUT.csv [--quick]
"""
import csv, statistics, sys, time
import torch
from torch.profiler import profile, ProfilerActivity

sys.path.insert(0, __import__("os").path.dirname(__file__))
import train_step as ts

SEQ = 128


def host_times(fn_fwd, reps):
    """Median host seconds of fwd and of its backward; GPU synchronised between iterations
    (so the queue is empty and the measurement is the host's issue time alone)."""
    f, b = [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y, dy = fn_fwd()
        t1 = time.perf_counter()
        y.backward(dy)
        t2 = time.perf_counter()
        f.append(t1 - t0); b.append(t2 - t1)
    torch.cuda.synchronize()
    return statistics.median(f), statistics.median(b)


def count_kernels(fn_fwd):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        y, dy = fn_fwd()
        torch.cuda.synchronize()
    nf = sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        y.backward(dy)
        torch.cuda.synchronize()
    nb = sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return nf, nb


def main():
    out = sys.argv[1]
    quick = "--quick" in sys.argv
    reps = 20 if quick else 60
    ts.check_gqa()
    rows = []
    # bare ops for scale
    a = torch.randn(64, device="cuda"); bb = torch.randn(64, device="cuda")
    for _ in range(200):
        a + bb
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        a + bb
    t_op = (time.perf_counter() - t0) / 2000
    torch.cuda.synchronize()
    ag = a.clone().requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        t0 = time.perf_counter()
        for _ in range(2000):
            ag * bb
        t_op_ag = (time.perf_counter() - t0) / 2000
    torch.cuda.synchronize()
    rows.append(dict(what="bare_op", model="", fused="", flash="", fwd_host_us=round(t_op * 1e6, 2),
                     bwd_host_us="", fwd_kernels=1, bwd_kernels=""))
    rows.append(dict(what="bare_op_autograd_autocast", model="", fused="", flash="", fwd_host_us=round(t_op_ag * 1e6, 2),
                     bwd_host_us="", fwd_kernels=1, bwd_kernels=""))
    print(f"bare op {t_op*1e6:.2f} us, with autograd+autocast {t_op_ag*1e6:.2f} us", flush=True)
    models = ["s1.3b"] if quick else ["s0.5b", "s1.3b", "s7b-8L"]
    for name in models:
        L, h, ffn, heads, kv, vocab = ts.MODELS[name]
        cos, sin = ts.rope_tables(SEQ, h // heads, "cuda")
        for fused in (1, 0):
            for flash in (1, 0):
                torch.manual_seed(0)
                with torch.device("cuda"):
                    layer = ts.Layer(h, ffn, heads, kv, flash, fused)
                x = torch.randn(1, SEQ, h, device="cuda", requires_grad=True)   # fp32 residual stream
                dy = torch.randn(1, SEQ, h, device="cuda")
                def fwd():
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        return layer(x, cos, sin), dy
                for _ in range(5):
                    y, d = fwd(); y.backward(d)
                torch.cuda.synchronize()
                tf, tb = host_times(fwd, reps)
                nf, nb = count_kernels(fwd)
                rows.append(dict(what="layer", model=name, fused=fused, flash=flash, fwd_host_us=round(tf * 1e6, 1),
                                 bwd_host_us=round(tb * 1e6, 1), fwd_kernels=nf, bwd_kernels=nb))
                print(f"{name} fused={fused} flash={flash}: fwd {tf*1e6:.0f} us ({nf} kernels), "
                      f"bwd {tb*1e6:.0f} us ({nb} kernels)", flush=True)
                del layer, x, dy
    # the compiled regions alone (one call each), fwd and bwd host time
    sw, ro = ts.fused_fns()
    L, h, ffn, heads, kv, vocab = ts.MODELS["s1.3b"]
    g = torch.randn(1, SEQ, ffn, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    u = torch.randn(1, SEQ, ffn, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    q = torch.randn(1, heads, SEQ, h // heads, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    cos, sin = ts.rope_tables(SEQ, h // heads, "cuda")
    for nm, fn in (("compiled_swiglu", lambda: (sw(g, u), torch.ones(1, SEQ, ffn, device="cuda", dtype=torch.bfloat16))),
                   ("compiled_rope", lambda: (ro(q, cos, sin), torch.ones_like(q)))):
        for _ in range(5):
            y, d = fn(); y.backward(d)
        tf, tb = host_times(fn, reps)
        nf, nb = count_kernels(fn)
        rows.append(dict(what=nm, model="s1.3b", fused=1, flash="", fwd_host_us=round(tf * 1e6, 1),
                         bwd_host_us=round(tb * 1e6, 1), fwd_kernels=nf, bwd_kernels=nb))
        print(f"{nm}: fwd {tf*1e6:.0f} us ({nf} kernels), bwd {tb*1e6:.0f} us ({nb} kernels)", flush=True)
    with open(out, "w", newline="") as f:
        f.write(f"# host issue cost (validation/host_bench.py), seq {SEQ}, mbs 1, median of {reps}; "
                f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; "
                f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
