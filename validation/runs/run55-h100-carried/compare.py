#!/usr/bin/env python3
"""Run 55 against the H200's rows and the cost model's prices (the README's outcome tables).
usage: python3 compare.py RESULTS_DIR H200_PROBE.toml H100_CALIBRATION.toml
"""
import csv, re, statistics, sys

res, h200, cal = sys.argv[1:4]


def tables(text, head):
    out = []
    for b in re.split(r'(?m)^\[\[' + head + r'\]\]\s*\n', text)[1:]:
        b = re.split(r'(?m)^\[', b)[0]
        out.append({k: v.strip('"') for k, v in re.findall(r'(?m)^(\w+)\s*=\s*(.*?)\s*(?:#.*)?$', b)})
    return out


h2 = open(h200).read()
h1 = open(f"{res}/call1/grouped/grouped_gemm.toml").read()


def ratios(rows, a, b, run=None):
    key = lambda r: (r["model"], r["gemm"], r["experts"], r["tokens_per_expert"])
    t = {}
    for r in rows:
        if r.get("dist") != "equal" or (run and r.get("run") not in (None, run)):
            continue
        t.setdefault(key(r), {})[r["method"]] = float(r["seconds"])
    return {k: v[b] / v[a] for k, v in t.items() if a in v and b in v}   # rate of a over rate of b = t_b / t_a


print("Grouped expert GEMMs: rate relative to one GEMM of the same total size, H100 over H200, by tokens per expert")
print(f"{'pair':28s} {'tokens':>6s} {'n':>3s} {'H100':>7s} {'H200':>7s} {'H100/H200':>9s}")
for a, b, run in (("grouped", "dense", None), ("fp8_loop", "fp8_dense", "44"), ("fp8_loop4", "fp8_dense", "45")):
    r1 = ratios(tables(h1, "grouped_gemm"), a, b)
    r2 = ratios(tables(h2, "grouped_gemm"), a, b, run)
    by = {}
    for k in r1:
        if k in r2:
            by.setdefault(int(k[3]), []).append((r1[k], r2[k]))
    for tpe in sorted(by):
        x = by[tpe]
        g1 = statistics.geometric_mean([p for p, _ in x]); g2 = statistics.geometric_mean([q for _, q in x])
        print(f"{a + ' / ' + b:28s} {tpe:6d} {len(x):3d} {g1:7.3f} {g2:7.3f} {g1 / g2:9.3f}")

print("\nAttention dropout 0.1: time with over time without, H100 and H200")
d1 = {(r["backend"], r["case"], r["pass"]): r for r in csv.DictReader(open(f"{res}/call1/dropout/attn_dropout.csv"))}
p1 = {}
for r in csv.DictReader(open(f"{res}/call1/dropout/attn_dropout.csv")):
    p1.setdefault((r["backend"], r["case"], r["pass"]), {})[float(r["dropout"])] = float(r["ms"])
IMPL = {"flash": "flash", "cudnn": "cudnn_fused"}
d2 = {}
for r in tables(h2, "attention_dropout"):
    d2[(r["impl"], r["pass"], r["batch"], r["heads"], r["seq"])] = float(r["seconds"]) / float(r["seconds_no_dropout"])
CASES = {"gpt3-5b tp1 mbs4": (4, 32, 2048), "gpt3-20b tp2 mbs2": (2, 24, 2048), "gpt3-175b tp4 mbs1": (1, 24, 2048),
         "gpt3-175b tp4 mbs2": (2, 24, 2048), "8k h32 b1": (1, 32, 8192)}
print(f"{'backend':8s} {'case':20s} {'pass':4s} {'H100':>6s} {'H200':>6s} {'H100/H200':>9s}")
qs = []
for (be, case, ps), v in sorted(p1.items()):
    b, h, s = CASES[case]
    r1 = v[0.1] / v[0.0]
    r2 = d2.get((IMPL[be], ps, str(b), str(h), str(s)))
    if r2:
        qs.append(r1 / r2)
        print(f"{be:8s} {case:20s} {ps:4s} {r1:6.3f} {r2:6.3f} {r1 / r2:9.3f}")
print(f"  H100/H200 over {len(qs)} pairs: {min(qs):.3f} .. {max(qs):.3f}")

m = open(cal).read()
mem = dict(re.findall(r'(?m)^(\w+)\s*=\s*([\d.eE+-]+)', m.split("[memory]")[1].split("[")[0]))
bw, ov = float(mem["achieved_bandwidth_gbs"]), float(mem["graph_launch_overhead_us"])
print(f"\nCold quantisation and copy (graph time per call) against the model's time in a busy stream: bytes / {bw:.0f} GB/s"
      f" + the gap between kernels ({ov:.2f} us; hardware::CostModel::stream_time)")
print(f"{'kernel':6s} {'M':>6s} {'K':>6s} {'MB':>8s} {'measured us':>11s} {'price us':>9s} {'price/meas':>10s}")
for r in csv.DictReader(open(f"{res}/call2/quant/quant_cold.csv")):
    price = ov + int(r["bytes"]) / bw * 1e-3
    print(f"{r['kernel']:6s} {r['M']:>6s} {r['K']:>6s} {int(r['bytes']) / 1e6:8.1f} {float(r['graph_us']):11.2f} {price:9.2f} "
          f"{price / float(r['graph_us']):10.3f}")

print("\nGEMM power (run 33's script): H100 against the H200, per carve-out")
p2 = {r["case"]: r for r in tables(h2, "gemm_power")}
print(f"{'case':14s} {'SMs':>4s} {'H100 MHz':>8s} {'W':>6s} {'TFLOP/s':>8s} | {'H200 MHz':>8s} {'W':>6s} {'TFLOP/s':>8s}")
rows55 = tables(open(f"{res}/../../../../hardware/calibration/h100-probe.toml").read(), "gemm_power")
for r in rows55:
    o = p2.get(r["case"], {})
    print(f"{r['case']:14s} {r['sms']:>4s} {r['clock_mhz']:>8s} {r['power_w']:>6s} {r['tflops']:>8s} | "
          f"{o.get('clock_mhz', '-'):>8s} {o.get('power_w', '-'):>6s} {o.get('tflops', '-'):>8s}")
