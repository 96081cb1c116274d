#!/usr/bin/env python3
"""Honesty check: time the probe's GEMM shapes with torch.matmul on the same GPU.

Reads the probe TOML ([[gemm]] entries), times torch.matmul(x, w.t()) with
x[m,k], w[n,k] (the probe's layout, torch's Linear) in bf16 — and fp8 e4m3
through torch._scaled_mm where available — with CUDA events, warm-up, median of
repeats, random data and buffer rotation beyond L2, and writes a CSV:
label,dtype,m,n,k,probe_tflops,torch_tflops,ratio.
Usage: gemm_torch.py PROBE.toml OUT.csv
"""
import csv, statistics, sys, tomllib
import torch

def bench(fn, sets, target_s=2e-3, repeats=9):
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); fn(0); b.record(); b.synchronize()
    one = a.elapsed_time(b) * 1e-3
    inner = max(1, min(4096, int(target_s / max(one, 1e-7))))
    v, idx = [], 0
    for _ in range(repeats):
        a.record()
        for _ in range(inner):
            fn(idx % sets); idx += 1
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / inner)
    return statistics.median(v)

def main():
    probe, out = sys.argv[1], sys.argv[2]
    with open(probe, "rb") as f:
        data = tomllib.load(f)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for g in data.get("gemm", []):
        m, n, k, dt = g["m"], g["n"], g["k"], g["dtype"]
        eb = 1 if dt == "fp8_e4m3" else 2
        per = (m * k + n * k) * eb + m * n * 2
        sets = max(1, min(4096, -(-4 * l2 // per)))
        if sets * per > 8 << 30:
            sets = max(1, (8 << 30) // per)
        xs = ws = None
        try:
            xs = [torch.empty(m, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]
            ws = [torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]
            if dt == "bf16":
                fn = lambda i: torch.matmul(xs[i], ws[i].t())
            else:
                xs = [x.to(torch.float8_e4m3fn) for x in xs]
                ws = [w.to(torch.float8_e4m3fn) for w in ws]
                one = torch.ones((), device="cuda", dtype=torch.float32)
                fn = lambda i: torch._scaled_mm(xs[i], ws[i].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            t = bench(fn, sets)
            tt = 2 * m * n * k / t * 1e-12
        except Exception as e:  # record, never abort the check
            print(f"torch {dt} {m}x{n}x{k}: {e}", file=sys.stderr)
            tt, t = float("nan"), float("nan")
        del xs, ws
        rows.append(dict(label=g["label"], dtype=dt, m=m, n=n, k=k, probe_s=g["seconds"], torch_s=t,
                         probe_tflops=round(g["tflops"], 2), torch_tflops=round(tt, 2),
                         ratio_probe_over_torch=round(g["tflops"] / tt, 4) if tt == tt else float("nan")))
        print(f"{dt:8s} {g['label']:30s} {m:6d} {n:6d} {k:6d} probe {g['tflops']:7.1f} torch {tt:7.1f} ratio {rows[-1]['ratio_probe_over_torch']}")
    torch.cuda.empty_cache()
    with open(out, "w", newline="") as f:
        f.write(f"# probe (cuBLASLt) vs torch.matmul / torch._scaled_mm on the same GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)
    r = [x["ratio_probe_over_torch"] for x in rows if x["ratio_probe_over_torch"] == x["ratio_probe_over_torch"]]
    within = sum(1 for x in r if abs(x - 1) <= 0.03)
    print(f"gemm honesty: {within}/{len(r)} shapes within 3%; median ratio {statistics.median(r):.4f}")

if __name__ == "__main__":
    main()
