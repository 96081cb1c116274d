"""Run 19 (from run 15's script): the wgrad GEMM's accumulation epilogue inside a sustained layer
sequence: bf16 output (beta 0), accumulated into a bf16 main_grad (beta 1: Megatron with
grad_reduce_in_fp32 = False, as NeMo's performance runs), accumulated into an fp32 main_grad (beta 1,
Megatron's default). Burst timings are skipped.

Method (one H200, torch only, bf16 inputs from randn; never zeros):
  * Shapes: the GEMMs of one decoder layer as Megatron-Core runs them (forward x @ W, dgrad dy @ W^T,
    wgrad x^T @ dy) for three layouts of the modern validation set: Llama 3.1 8B tp1 cp2 (4096
    tokens per rank), Nemotron-4 15B tp4 mbs4 (16384 tokens), Llama 3.1 405B tp8 cp2 (4096 tokens).
  * burst: each GEMM alone, 5 warm-ups, then 5 groups of 20 back-to-back calls between two CUDA
    events; median of the group means (the probe's method).
  * sustained: the layer's whole GEMM sequence (4 forward, 4 dgrad, 4 wgrad) in a loop for SECONDS
    seconds; each GEMM between its own pair of events during the last third; median per GEMM.
  * wgrad variants: bf16 output (beta 0); fp32 output (beta 0); fp32 output accumulated into an
    fp32 buffer (beta 1: Megatron's gradient_accumulation_fusion into main_grad), through
    torch.mm / torch.addmm with out_dtype=torch.float32 (checked against an fp32 reference).
  * nvidia-smi is sampled every 100 ms by run.sh; phases are logged with wall-clock times.
Output: CSV rows model,gemm,m,n,k,mode,variant,median_us,tflops
"""
import csv, statistics, sys, time
import torch

SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 24.0
out_path = sys.argv[1]
dev = torch.device("cuda")
torch.manual_seed(0)

LAYOUTS = {
    # name: tokens, [(gemm, in, out)]
    "llama3.1-8b_tp1_cp2": (4096, [("qkv", 4096, 6144), ("proj", 4096, 4096), ("fc1", 4096, 28672), ("fc2", 14336, 4096)]),
    "nemotron4-15b_tp4_mbs4": (16384, [("qkv", 6144, 2048), ("proj", 1536, 6144), ("fc1", 6144, 6144), ("fc2", 6144, 6144)]),
    "llama3.1-405b_tp8_cp2": (4096, [("qkv", 16384, 2304), ("proj", 2048, 16384), ("fc1", 16384, 13312), ("fc2", 6656, 16384)]),
}

phases = []
def phase(name):
    phases.append((time.time(), name)); print(f"{time.strftime('%H:%M:%S')} phase {name}", flush=True)

def has_out_dtype():
    a = torch.randn(64, 64, device=dev, dtype=torch.bfloat16); b = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    try:
        c = torch.mm(a, b, out_dtype=torch.float32)
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        acc = torch.zeros(64, 64, device=dev, dtype=torch.float32) + 1.0
        d = torch.addmm(acc, a, b, out_dtype=torch.float32)
        err2 = ((d.double() - (ref + 1.0)).norm() / (ref + 1.0).norm()).item()
        print(f"out_dtype supported: mm rel err {err:.2e}, addmm rel err {err2:.2e}", flush=True)
        return err < 1e-3 and err2 < 1e-3
    except Exception as e:  # noqa: BLE001
        print("out_dtype not supported:", e, flush=True)
        return False

OUT_DTYPE = has_out_dtype()

def make_ops(tokens, gemms, wvariant):
    """The layer's GEMM calls as closures: (gemm name, kind, m, n, k, fn)."""
    ops = []
    for g, i, o in gemms:
        x = torch.randn(tokens, i, device=dev, dtype=torch.bfloat16)
        w = torch.randn(i, o, device=dev, dtype=torch.bfloat16) * 0.02
        dy = torch.randn(tokens, o, device=dev, dtype=torch.bfloat16)
        xt = x.t()  # [i, tokens], a transposed view as cuBLAS reads it
        ops.append((g, "fwd", tokens, o, i, (lambda x=x, w=w: torch.mm(x, w))))
        ops.append((g, "dgrad", tokens, i, o, (lambda dy=dy, w=w: torch.mm(dy, w.t()))))
        if wvariant == "bf16":
            fn = lambda xt=xt, dy=dy: torch.mm(xt, dy)
        elif wvariant == "bf16acc":
            acc16 = torch.zeros(i, o, device=dev, dtype=torch.bfloat16)
            fn = lambda xt=xt, dy=dy, acc16=acc16: torch.addmm(acc16, xt, dy, out=acc16)
        elif wvariant == "fp32":
            fn = lambda xt=xt, dy=dy: torch.mm(xt, dy, out_dtype=torch.float32)
        else:  # fp32acc
            acc = torch.zeros(i, o, device=dev, dtype=torch.float32)
            fn = lambda xt=xt, dy=dy, acc=acc: torch.addmm(acc, xt, dy, out_dtype=torch.float32, out=acc)
            try:
                fn(); torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001  (in-place output refused: same traffic, a new output)
                print("addmm out= refused:", e, flush=True)
                fn = lambda xt=xt, dy=dy, acc=acc: torch.addmm(acc, xt, dy, out_dtype=torch.float32)
        ops.append((g, "wgrad", i, o, tokens, fn))
    return ops

def burst(fn):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    means = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20): fn()
        e.record(); e.synchronize()
        means.append(s.elapsed_time(e) * 1e3 / 20)
    return statistics.median(means)

def sustained(ops):
    order = [o for o in ops if o[1] == "fwd"] + [o for o in ops if o[1] == "dgrad"] + [o for o in ops if o[1] == "wgrad"]
    t_end = time.time() + SECONDS
    t_rec = time.time() + SECONDS * 2 / 3
    times = {(o[0], o[1]): [] for o in order}
    while time.time() < t_end:
        rec = time.time() >= t_rec
        evs = []
        for g, kind, m, n, k, fn in order:
            if rec:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(); e.record(); evs.append(((g, kind), s, e))
            else:
                fn()
        torch.cuda.synchronize()
        for key, s, e in evs: times[key].append(s.elapsed_time(e) * 1e3)
    return {key: statistics.median(v) for key, v in times.items() if v}

rows = []
variants = ["bf16", "bf16acc", "fp32acc"] if OUT_DTYPE else ["bf16", "bf16acc"]
for name, (tokens, gemms) in LAYOUTS.items():
    for wv in variants:
        ops = make_ops(tokens, gemms, wv)
        if True:
            phase(f"sustained {name} {wv}")
            med = sustained(ops)
            for g, kind, m, n, k, fn in ops:
                us = med[(g, kind)]
                rows.append([name, f"{g}_{kind}", m, n, k, "sustained", wv, f"{us:.2f}", f"{2*m*n*k/us/1e6:.1f}"])
            phase("idle")
            time.sleep(3)
        del ops; torch.cuda.empty_cache()

with open(out_path, "w", newline="") as f:
    w = csv.writer(f); w.writerow(["model", "gemm", "m", "n", "k", "mode", "variant", "median_us", "tflops"]); w.writerows(rows)
with open(out_path.replace(".csv", "_phases.txt"), "w") as f:
    for t, n in phases: f.write(f"{t:.3f} {n}\n")
by = {(r[0], r[1], r[6]): float(r[7]) for r in rows}
print("\nmodel gemm  bf16acc/bf16  fp32acc/bf16   (sustained)")
for (mdl, g, v), us in sorted(by.items()):
    if v != "bf16" or not g.endswith("wgrad"): continue
    a, b = by.get((mdl, g, "bf16acc")), by.get((mdl, g, "fp32acc"))
    print(f"{mdl:26s} {g:12s} {a/us if a else float('nan'):8.3f} {b/us if b else float('nan'):8.3f}")
