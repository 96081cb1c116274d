#!/usr/bin/env python3
"""Run 51: (a) the shipped H200 attention fit (run 22's back-to-back tile form, hardware/calibration/h200.toml)
against run 51's back-to-back calls; (b) the per-call table fitted in the tile form without intercept (an
alternative to the seq form the Blackwell calibrations use) against the same calls.
Usage: tile_check.py RESULTS_DIR H200_TOML"""
import csv, math, sys
d, h200 = sys.argv[1], sys.argv[2]
PEAK = 989.4e12

def section(path, name):
    out, cur = {}, None
    for line in open(path):
        line = line.split("#")[0].strip()
        if line.startswith("["):
            cur = line.strip("[]"); continue
        if cur == name and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            try: out[k] = float(v)
            except ValueError: pass
    return out

def tiles(h, s, w):
    n = math.ceil(s / 128)
    return h * (s / 128) ** 2 * 0.5, h * (n * n / 2 + (w - 0.5) * n)   # counted, executed

def flops(h, s, bwd): return 4.0 * s * s * h * 128 * 0.5 * (2.5 if bwd else 1.0)

def tile_price(a, h, s, bwd):
    c, e = tiles(h, s, a["diagonal_tile_weight"])
    knee = a["flash_bwd_tile_knee" if bwd else "flash_fwd_tile_knee"]
    eff = a["flash_bwd_eff" if bwd else "flash_fwd_eff"] * e / (e + knee)
    return a.get("overhead_us", 0) * 1e-6 + flops(h, s, bwd) * (e / c) / (PEAK * eff)

b2b = list(csv.DictReader(open(f"{d}/b2b.csv")))
pc = list(csv.DictReader(open(f"{d}/per_call.csv")))
shipped = {"pyt_cudnn": section(h200, "attention"), "pyt_flash_attention": section(h200, "attention_fa2")}

# (b) tile-form, no-intercept fit of the per-call table (calls >= 3 x the shortest of their pass and backend)
def fit(be):
    samples = []
    for bwd in (False, True):
        rows = [r for r in pc if r["backend"] == be]
        ts = [float(r["backward_time" if bwd else "forward_time"]) * 1e-3 for r in rows]
        short = min(ts)
        samples += [(bwd, int(r["q_seqlen"]), t) for r, t in zip(rows, ts) if t >= 3 * short]
    best = None
    knees = [0] + [round(128 * 2 ** (i / 2)) for i in range(29)]
    for w in [1 + 0.5 * i for i in range(11)]:
        for kf in knees:
            for kb in knees:
                # t = x * flops*(e/c)*(e+knee)/e / PEAK, x = 1/eff per pass: relative LS -> x = sum(u/t)/sum(u^2/t^2)
                err, xs = 0, {}
                for bwd, knee in ((False, kf), (True, kb)):
                    us = []
                    for (bb, s, t) in samples:
                        if bb != bwd: continue
                        c, e = tiles(128, s, w)
                        us.append((flops(128, s, bwd) * (e / c) * (e + knee) / e / PEAK, t))
                    x = sum(u / t for u, t in us) / sum(u * u / (t * t) for u, t in us)
                    xs[bwd] = x
                    err += sum((x * u / t - 1) ** 2 for u, t in us)
                if best is None or err < best[0]:
                    best = (err, w, kf, kb, xs)
    err, w, kf, kb, xs = best
    return {"diagonal_tile_weight": w, "flash_fwd_tile_knee": kf, "flash_bwd_tile_knee": kb,
            "flash_fwd_eff": 1 / xs[False], "flash_bwd_eff": 1 / xs[True]}

alt = {be: fit(be) for be in shipped}
for be, a in alt.items():
    print(f"tile-form per-call fit {be}: fwd {a['flash_fwd_eff']:.3f} bwd {a['flash_bwd_eff']:.3f} w {a['diagonal_tile_weight']} "
          f"knees {a['flash_fwd_tile_knee']:.0f}/{a['flash_bwd_tile_knee']:.0f}")
print("| backend | heads | seq | pass | back to back ms | h200.toml / b2b | tile-form per-call fit / b2b |")
print("|---|---:|---:|---|---:|---:|---:|")
for r in b2b:
    be, h, s, bwd, t = r["backend"], int(r["heads"]), int(r["seq"]), r["pass"] == "bwd", float(r["ms"]) * 1e-3
    print(f"| {be} | {h}/{r['kv_heads']} | {s} | {r['pass']} | {t*1e3:.3f} | {tile_price(shipped[be], h, s, bwd) / t:.3f} | "
          f"{tile_price(alt[be], h, s, bwd) / t:.3f} |")
