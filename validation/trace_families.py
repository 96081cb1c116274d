#!/usr/bin/env python3
"""Kernel-family samples from the in-step kernel trace (run 8, validation/kernel_trace.py):
the plain-PyTorch recipe's pointwise kernels that kernel_bw.py does not time, each sample one
layer's chain of one family on one tensor (e.g. the five eager RoPE pieces on q in the forward) in
one configuration: seconds = the real kernels' summed duration / layers, bytes = the summed
mfusim byte count of the modelled kernels they stand for (x = elements of the tensor, e = 2 B
bf16), so the fitted GB/s is what the cost model divides by and a fit over chains keeps each
chain's total (the pieces alone run at 0.9-3.3 TB/s: a per-piece fit would not):
  rope_eager, swiglu_eager (+ _bwd: the backward's chains) (fused = 0): eager RoPE pieces on the transposed q/k views and SwiGLU
           pieces on the chunk views of the up projection (TensorIterator's non-vectorised path).
           fwd rope_mul 2ex, rope_neg ex, rope_cat 2ex, rope_add 3ex, silu 2ex, swiglu_mul 3ex;
           bwd rope_mul_bwd 3ex, rope_neg_bwd 1.5ex, rope_cat_bwd 3ex, rope_add_bwd 5ex,
           silu_bwd 3ex, swiglu_mul_bwd 5ex (its two real muls together).
  rope_compiled, swiglu_compiled (+ _bwd) (fused = 1): the Triton kernels of torch.compile(dynamic=True) of RoPE and SwiGLU:
           rope fwd 2ex, bwd 3ex; swiglu fwd 3ex, bwd 5ex.
Usage: trace_families.py TRACE.csv.gz OUT.toml  (writes [[memory]] kind = "torch:<family>" rows
in the probe-file format that mfusim_calibrate fits into [memory_families]).
"""
import collections, csv, gzip, json, math, sys

def prod(d):
    return math.prod(d)

def classify(r):
    """(family, modelled kernel, bytes per modelled kernel, real kernels per modelled kernel) or None."""
    op, k, p = r["op"], r["kernel"], r["pass"]
    try:
        dims = json.loads(r["input_dims"]) if r["input_dims"] else []
    except json.JSONDecodeError:
        return None
    e = 2
    if "triton" in k:
        x = prod(dims[0])
        if "mul_silu_silu_backward" in k: return ("compiled", "swiglu_bwd", 5 * e * x, 1)
        if "mul_silu" in k: return ("compiled", "swiglu", 3 * e * x, 1)
        if "cat_mul_neg" in k: return ("compiled", "rope" if p == "FWD" else "rope_bwd", (2 if p == "FWD" else 3) * e * x, 1)
        return None
    four = lambda d: isinstance(d, list) and len(d) == 4 and all(isinstance(v, int) for v in d)
    three = lambda d: isinstance(d, list) and len(d) == 3 and all(isinstance(v, int) for v in d)
    if not dims: return None
    d0 = dims[0]
    fwd = p == "FWD"
    if op == "aten::mul" and len(dims) >= 2 and four(d0) and isinstance(dims[1], list) and len(dims[1]) == 2:
        return ("strided", "rope_mul" + ("" if fwd else "_bwd"), (2 if fwd else 3) * e * prod(d0), 1)
    if op == "aten::neg" and four(d0):
        return ("strided", "rope_neg" + ("" if fwd else "_bwd"), (1 if fwd else 1.5) * e * 2 * prod(d0), 1)
    if op == "aten::cat" and isinstance(d0, list) and len(d0) == 2 and all(four(v) for v in d0):
        return ("strided", "rope_cat" + ("" if fwd else "_bwd"), (2 if fwd else 3) * e * 2 * prod(d0[0]), 1)
    if op in ("aten::add", "aten::add_") and len(dims) >= 2 and four(d0) and four(dims[1]):
        return ("strided", "rope_add" + ("" if fwd else "_bwd"), (3 if fwd else 5) * e * prod(d0), 1)
    if op == "aten::silu" and three(d0):
        return ("strided", "silu", 2 * e * prod(d0), 1)
    if op == "aten::silu_backward" and three(d0):
        return ("strided", "silu_bwd", 3 * e * prod(d0), 1)
    if op == "aten::mul" and len(dims) >= 2 and three(d0) and three(dims[1]) and d0 == dims[1] \
            and "BFloat16" in r["input_types"]:
        return ("strided", "swiglu_mul" if fwd else "swiglu_mul_bwd", (3 if fwd else 5) * e * prod(d0), 1 if fwd else 2)
    return None

def main():
    src, out = sys.argv[1], sys.argv[2]
    rows = [r for r in csv.DictReader(l for l in gzip.open(src, "rt") if not l.startswith("#"))]
    agg = collections.defaultdict(lambda: [0.0, 0, 0.0])   # seconds, real kernels, bytes (summed)
    layers = {"s0.5b": 16, "s1.3b": 24, "s3b": 26, "s7b-8L": 8}
    for r in rows:
        if r["pass"] not in ("FWD", "BWD"):
            continue
        fused = r["config"].endswith("fused=1")
        c = classify(r)
        if not c or (c[0] == "compiled") != fused:
            continue
        fam, name, nbytes, per = c
        fam = (("rope" if name.startswith("rope") else "swiglu") + ("_compiled" if fam == "compiled" else "_eager")
               + ("_bwd" if r["pass"] == "BWD" else ""))
        # chain key: the tensor the chain works on (q or k: heads of the 4-D shape; SwiGLU: one)
        try:
            d0 = json.loads(r["input_dims"])[0]
            while isinstance(d0, list) and d0 and isinstance(d0[0], list):
                d0 = d0[0]
            tensor = d0[1] if fam.startswith("rope") and len(d0) == 4 else 0
        except (json.JSONDecodeError, IndexError, TypeError):
            tensor = 0
        key = (r["config"], fam, r["pass"], tensor)
        a = agg[key]
        a[0] += float(r["dur_us"]) * 1e-6; a[1] += 1; a[2] += nbytes / per
    with open(out, "w") as f:
        f.write(f"# kernel-family samples from the in-step kernel trace ({src}), validation/trace_families.py:\n"
                "# seconds = mean duration of the real kernel(s) of one modelled kernel; bytes on mfusim's count\n")
        for (cfg, fam, pas, tensor), (sec, n, b) in sorted(agg.items()):
            L = layers[cfg.split()[0]]
            s, b = sec / L, b / L
            what = f"{pas.lower()} chain" + (f" on {tensor} heads" if tensor else "")
            f.write(f'\n[[memory]]\nkind = "torch:{fam}"\nop = "{what} per layer ({cfg}; {n} kernels)"\n'
                    f"bytes = {int(b)}\nseconds = {s:.6e}\nbandwidth_gbs = {b / s * 1e-9:.1f}\n")
            print(f"{fam:15s} {what:22s} {cfg:50s} n={n:4d} {s*1e6:8.1f} us {b/s*1e-9:7.0f} GB/s")

if __name__ == "__main__":
    main()
