#!/usr/bin/env python3
"""Run 54: the H100's measurements against the H200's, record for record (same scripts, same keys).
Usage: compare.py RESULTS_DIR H200_PROBE.toml   (prints a markdown summary)
Ratios are H100 time / H200 time for the same record (GEMM: label, dtype, m, n, k; attention: impl, timing,
pass, batch, heads, kv_heads, seq, seq_kv, head_dim, causal; memory: kind, op, shape, bytes)."""
import math, os, re, statistics, sys

def tables(path):
    t = open(path).read()
    parts = re.split(r'(?m)^(\[\[?[A-Za-z0-9_.]+\]\]?)[^\n]*\n', t)
    for i in range(1, len(parts), 2):
        yield parts[i], dict(re.findall(r'(?m)^(\w+)\s*=\s*(.*?)\s*(?:#.*)?$', parts[i + 1]))

def key(h, d):
    if h == "[[gemm]]": return (h, d.get("label"), d.get("dtype"), d["m"], d["n"], d["k"])
    if h == "[[attention]]": return (h,) + tuple(d.get(x) for x in ("impl", "timing", "pass", "batch", "heads", "kv_heads", "seq", "seq_kv", "head_dim", "causal"))
    if h == "[[memory]]": return (h, d.get("kind"), d.get("op"), d.get("shape"), d.get("bytes"))
    return None

res, h200 = sys.argv[1:3]
ref = {}
for h, d in tables(h200):
    k = key(h, d)
    if k and "seconds" in d: ref.setdefault(k, float(d["seconds"]))
groups = {}
for f in ("h100-probe.toml", "sdpa.toml", "sdpa_b2b_cudnn.toml", "sdpa_b2b_fa2.toml", "kernel_bw.toml"):
    p = os.path.join(res, f)
    if not os.path.exists(p): print(f"(missing {f})"); continue
    for h, d in tables(p):
        k = key(h, d)
        if not k or "seconds" not in d or k not in ref: continue
        if h == "[[gemm]]": g = f"GEMM {d.get('dtype').strip(chr(34))} {'grid' if 'grid' in d.get('label','') else 'model shapes'}"
        elif h == "[[attention]]": g = f"attention {d.get('impl','').strip(chr(34))} {d.get('timing','single').strip(chr(34))} {d.get('pass','').strip(chr(34))}"
        else: g = f"memory {d.get('kind','').strip(chr(34))}"
        big = float(d["seconds"]) >= 100e-6
        groups.setdefault((g, big), []).append(float(d["seconds"]) / ref[k])
print("| records | n | geo-mean H100/H200 | min | max |\n|---|---:|---:|---:|---:|")
for (g, big), r in sorted(groups.items()):
    gm = math.exp(sum(math.log(x) for x in r) / len(r))
    print(f"| {g} ({'>= 100 us' if big else '< 100 us'}) | {len(r)} | {gm:.3f} | {min(r):.3f} | {max(r):.3f} |")
