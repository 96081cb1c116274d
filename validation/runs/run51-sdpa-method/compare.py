#!/usr/bin/env python3
"""Run 51's comparison: what the Blackwell calibrations' method (a per-call table fitted without intercept,
validation/cudnn_sdpa) makes of calls whose device time is known (back to back), on the H200.
Usage: compare.py RESULTS_DIR FIT.toml   (FIT: validation_xla --fit-table H200 RESULTS_DIR/per_call.csv PROBE FIT)"""
import csv, sys
d, fit = sys.argv[1], sys.argv[2]

def section(path, name):
    out, cur = {}, None
    for line in open(path):
        line = line.split("#")[0].strip()
        if line.startswith("["):
            cur = line.strip("[]")
            continue
        if cur == name and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out

cal = {"pyt_cudnn": section(fit, "attention"), "pyt_flash_attention": section(fit, "attention_fa2")}
def price(be, h, s, bwd):
    a = cal[be]
    eff = a["flash_bwd_eff" if bwd else "flash_fwd_eff"] * s / (s + a["flash_bwd_seq_knee" if bwd else "flash_fwd_seq_knee"])
    fl = 4.0 * s * s * h * 128 * 0.5 * (2.5 if bwd else 1.0)
    return (a.get("overhead_us", 0) * 1e-6 + fl / (a["peak_tflops"] * 1e12 * eff)) * 1e3   # ms

per_call = {(r["backend"], int(r["q_seqlen"])): r for r in csv.DictReader(open(f"{d}/per_call.csv"))}
b2b = [r for r in csv.DictReader(open(f"{d}/b2b.csv"))]
print("| backend | heads | seq | pass | per call ms | back to back ms | per call - b2b us | fit's price ms | price / b2b |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
for r in b2b:
    be, h, s, pss, t = r["backend"], int(r["heads"]), int(r["seq"]), r["pass"], float(r["ms"])
    pc = per_call.get((be, s)) if h == 128 else None
    pcs = float(pc["forward_time" if pss == "fwd" else "backward_time"]) if pc else None
    p = price(be, h, s, pss == "bwd")
    print(f"| {be} | {h}/{r['kv_heads']} | {s} | {pss} | {'%.3f' % pcs if pcs else '-'} | {t:.3f} | "
          f"{'%.0f' % ((pcs - t) * 1e3) if pcs else '-'} | {p:.3f} | {p / t:.3f} |")
