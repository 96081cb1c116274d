"""Run 20 (run 17's method, fp8 GEMM): the power-capped clock against the GEMM duty when the GEMM is
an fp8 e4m3 GEMM (torch._scaled_mm, tensor-wise scales, bf16 output) instead of bf16.

Method (one H200, torch, random bf16 inputs): a cycle of n_g GEMMs (x[4096,8192] @ W[8192,8192]) then n_m
memory-bound adds (c = a + b over 268M bf16 elements: 1.07 GB read, 0.54 GB written) is looped for
SECONDS s per (n_g, n_m); in the last half every kernel is timed between its own CUDA events (no host
synchronisation inside a cycle, one per cycle). duty = GEMM time / (GEMM time + add time) as measured.
Also: cuDNN SDPA forward+backward (b 1, 32 q / 8 kv heads, s 8192, d 128, causal) alone, alternating
with the GEMM, and alternating with adds. nvidia-smi is sampled by run.sh; phases logged with wall times.
Output CSV: case,n_g,n_m,duty,gemm_us,add_us,attn_us
"""
import csv, statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

out = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
dev = "cuda"
torch.manual_seed(0)
x = (torch.randn(4096, 8192, device=dev) * 0.5).to(torch.float8_e4m3fn)
w = (torch.randn(8192, 8192, device=dev) * 0.5).to(torch.float8_e4m3fn).t()   # column-major, as _scaled_mm wants
one = torch.ones((), device=dev, dtype=torch.float32)
a = torch.randn(268_435_456, device=dev, dtype=torch.bfloat16)
b = torch.randn(268_435_456, device=dev, dtype=torch.bfloat16)
c = torch.empty_like(a)
q = torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
k = torch.randn(1, 8, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
v = torch.randn(1, 8, 8192, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
go = torch.randn(1, 32, 8192, 128, device=dev, dtype=torch.bfloat16)

def gemm(): torch._scaled_mm(x, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
def add(): torch.add(a, b, out=c)
def attn():
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    o.backward(go)
    q.grad = k.grad = v.grad = None

phases = []
def run(case, seq):
    """seq: list of (kind, fn); looped SECONDS s; per-kind medians over the second half."""
    phases.append((time.time(), case)); print(time.strftime("%H:%M:%S"), case, flush=True)
    t_end = time.time() + SECONDS; t_rec = time.time() + SECONDS / 2
    times = {}
    while time.time() < t_end:
        rec = time.time() >= t_rec
        evs = []
        for kind, fn in seq:
            if rec:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(); e.record(); evs.append((kind, s, e))
            else:
                fn()
        torch.cuda.synchronize()
        for kind, s, e in evs: times.setdefault(kind, []).append(s.elapsed_time(e) * 1e3)
    med = {kd: statistics.median(v[1:] if len(v) > 3 else v) for kd, v in times.items()}
    tot = {kd: sum(v) for kd, v in times.items()}
    tc = tot.get("gemm", 0) + tot.get("attn", 0)
    duty = tc / max(tc + tot.get("add", 0), 1e-9)
    return med, duty

for _ in range(3): gemm(); add()
torch.cuda.synchronize()
rows = []
for ng, nm in [(1, 0), (8, 1), (4, 1), (2, 1), (1, 1), (1, 2), (1, 4)]:
    med, duty = run(f"gemm{ng}_add{nm}", [("gemm", gemm)] * ng + [("add", add)] * nm)
    rows.append([f"gemm{ng}_add{nm}", ng, nm, f"{duty:.3f}", f"{med.get('gemm', 0):.1f}", f"{med.get('add', 0):.1f}", ""])
    phases.append((time.time(), "idle")); time.sleep(2)
with open(out, "w", newline="") as f:
    wr = csv.writer(f); wr.writerow(["case", "n_g", "n_m", "duty", "gemm_us", "add_us", "attn_us"]); wr.writerows(rows)
with open(out.replace(".csv", "_phases.txt"), "w") as f:
    for t, n in phases: f.write(f"{t:.3f} {n}\n")
g1 = float(rows[0][4])
print("\ncase           duty   gemm_us  gemm/gemm(duty 1)  add_us  attn_us")
for r in rows:
    gr = f"{float(r[4]) / g1:.3f}" if float(r[4]) > 0 else "-"
    print(f"{r[0]:14s} {r[3]:>6s} {r[4]:>8s} {gr:>8s} {r[5]:>8s} {r[6]:>8s}")
