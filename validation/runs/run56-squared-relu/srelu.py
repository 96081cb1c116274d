#!/usr/bin/env python3
"""Run 56: Megatron-Core's squared-ReLU activation as eager PyTorch runs it (torch.pow(F.relu(x), 2), no fusion)
at the Nemotron rows' per-rank MLP shapes, forward and backward, kernel by kernel, on one GPU.

usage: python3 srelu.py OUTDIR
Two implementations: "eager" (Megatron-Core calling the plain function: NeMo 2's nemo.collections.llm) and
"compiled" (NeMo 1's squared_relu, decorated with torch.compile since NeMo commit d9f20774fd, 2024-04-23: the
launcher path of the NeMo 24.07 and 24.09 rows).
After a 5 s GEMM warm-up (the clock a training step holds), per shape [tokens, ffn / tp] in bf16, three profiles
(torch.profiler, CUDA activity, device times), each of 10 iterations after 3 unprofiled ones:
  fwd: y = torch.pow(F.relu(x), 2)                       (x requires grad, as in training)
  bwd: y.backward(g) for 10 forwards made before the profile
  copy: one bf16 copy of a tensor of the same size (the copy rate at those bytes, for reference)
Writes OUTDIR/srelu_kernels.csv (impl, shape, tokens, width, phase, kernel, calls_per_iter, us_per_iter: the
phase's kernels grouped by name) and prints the totals per iteration.
"""
import csv, sys, time
from collections import defaultdict
import torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

SHAPES = [  # name, tokens per micro-batch on a rank, ffn / tp
    ("nemotron4-15b tp4 mbs4", 4 * 4096, 24576 // 4),
    ("nemotron4-340b tp8 mbs1", 4096, 73728 // 8),
    ("nemotron3-8b tp2 mbs4", 4 * 4096, 16384 // 2),
    ("nemotron3-22b tp2 mbs2", 2 * 4096, 24576 // 2),
]
ITERS = 10


def kernels(prof):
    agg = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type.name == "CUDA" and e.device_time_total > 0:
            a = agg[e.name]
            a[0] += 1
            a[1] += e.device_time_total
    return agg


def squared_relu(x):
    return torch.pow(F.relu(x), 2)


def main():
    out = sys.argv[1]
    dev = "cuda"
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < 5:
        a @ a
    torch.cuda.synchronize()
    del a
    rows = []
    compiled = torch.compile(squared_relu)
    for impl, fn in (("eager", squared_relu), ("compiled", compiled)):
      for name, n, w in SHAPES:
          x = torch.randn(n, w, device=dev, dtype=torch.bfloat16, requires_grad=True)
          g = torch.randn(n, w, device=dev, dtype=torch.bfloat16)
          c = torch.empty_like(g)
          fwd = lambda: fn(x)
          for _ in range(3):
              fwd().backward(g)
              c.copy_(g)
          x.grad = None
          torch.cuda.synchronize()
          with profile(activities=[ProfilerActivity.CUDA]) as pf:
              for _ in range(ITERS):
                  y = fwd()
              torch.cuda.synchronize()
          del y
          ys = [fwd() for _ in range(ITERS)]
          torch.cuda.synchronize()
          with profile(activities=[ProfilerActivity.CUDA]) as pb:
              for y in ys:
                  y.backward(g)
                  x.grad = None
              torch.cuda.synchronize()
          del ys
          with profile(activities=[ProfilerActivity.CUDA]) as pc:
              for _ in range(ITERS):
                  c.copy_(g)
              torch.cuda.synchronize()
          tot = {}
          for phase, p in (("fwd", pf), ("bwd", pb), ("copy", pc)):
              agg = kernels(p)
              tot[phase] = (sum(v[0] for v in agg.values()) / ITERS, sum(v[1] for v in agg.values()) / ITERS)
              for k, (cnt, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                  rows.append([impl, name, n, w, phase, k, cnt / ITERS, round(us / ITERS, 2)])
          print(f"{impl} {name}: [{n}, {w}] fwd {tot['fwd'][0]:.0f} kernels {tot['fwd'][1]:.1f} us, bwd {tot['bwd'][0]:.0f} "
                f"kernels {tot['bwd'][1]:.1f} us, copy {tot['copy'][1]:.1f} us", flush=True)
          del x, g, c
          torch.cuda.empty_cache()
    with open(f"{out}/srelu_kernels.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["impl", "shape", "tokens", "width", "phase", "kernel", "calls_per_iter", "us_per_iter"])
        wr.writerows(rows)


if __name__ == "__main__":
    main()
