#!/usr/bin/env python3
"""Error analysis of the modern set (docs/validation-modern.md, "Where the error comes from").

Reads the CSV of build/validation/diagnose_modern (tuning half by default) and prints
(1) the error with the two first-order what-ifs applied (fp8 attention at the bf16 peak;
the measured [gemm_fp8] for calibrated H100 fp8 rows), (2) the compute growth each row
would need if the whole remaining gap were in compute (k = 1 + gap / compute), and
(3) the mean error and k grouped by each layout field.
  build/validation/diagnose_modern --profile calibrated > /tmp/cal.csv
  python3 validation/modern/analyze.py /tmp/cal.csv
"""
import csv
import statistics as st
import sys
from collections import defaultdict


def main(path):
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        for k in ("published_s", "predicted_s", "error", "compute_s", "exposed_comm_s", "bubble_s",
                  "d_attn_bf16_s", "d_gemm_fp8m_s", "layer_gemm_ms", "layer_attn_ms", "layer_mem_ms"):
            r[k] = float(r[k])
        pred2 = r["predicted_s"] + r["d_attn_bf16_s"] + r["d_gemm_fp8m_s"]
        r["error2"] = pred2 / r["published_s"] - 1
        r["k"] = 1 + (r["published_s"] - pred2) / (r["compute_s"] + r["d_attn_bf16_s"] + r["d_gemm_fp8m_s"])
        tot = r["layer_gemm_ms"] + r["layer_attn_ms"] + r["layer_mem_ms"]
        r["attn_share"] = r["layer_attn_ms"] / tot
        r["comm_share"] = (r["exposed_comm_s"] + r["bubble_s"]) / r["predicted_s"]

    def summary(name, sel):
        if not sel:
            return
        e = [r["error"] for r in sel]
        e2 = [r["error2"] for r in sel]
        k = [r["k"] for r in sel]
        print(f"  {name:28s} n={len(sel):3d}  error {100*st.mean(e):+6.1f}%  after what-ifs {100*st.mean(e2):+6.1f}%"
              f" (median |.| {100*st.median([abs(x) for x in e2]):5.1f}%)  compute growth k {st.mean(k):.3f}"
              f" [{min(k):.2f}, {max(k):.2f}]  exposed comm+bubble {100*st.mean([r['comm_share'] for r in sel]):4.1f}%")

    print(f"{path}: {len(rows)} rows")
    summary("all", rows)
    for field, key in [("gpu_type", lambda r: r["gpu_type"]), ("precision", lambda r: r["precision"]),
                       ("gpu/precision", lambda r: r["gpu_type"] + "/" + r["precision"]),
                       ("tp", lambda r: int(r["tp"])), ("cp", lambda r: int(r["cp"])),
                       ("pp>1", lambda r: int(r["pp"]) > 1), ("vpp>1", lambda r: int(r["vpp"]) > 1),
                       ("seq", lambda r: int(r["seq"])), ("model", lambda r: r["model"]),
                       ("gpus<=64", lambda r: int(r["gpus"]) <= 64),
                       ("long-seq table (NEMOLS)", lambda r: r["id"].startswith("NEMOLS"))]:
        print(f"by {field}:")
        g = defaultdict(list)
        for r in rows:
            g[key(r)].append(r)
        for v in sorted(g, key=str):
            summary(str(v), g[v])
    # weak-scaling series: the same layout from the fewest to the most GPUs
    print("weak scaling (same layout, more data-parallel replicas): published vs predicted step growth")
    series = defaultdict(list)
    for r in rows:
        series[r["id"].rsplit("-", 1)[0]].append(r)
    for name, sel in sorted(series.items()):
        if len(sel) < 3:
            continue
        sel.sort(key=lambda r: int(r["gpus"]))
        a, b = sel[0], sel[-1]
        print(f"  {name:36s} {a['gpus']:>5s}->{b['gpus']:>5s} GPUs: published {100*(b['published_s']/a['published_s']-1):+5.1f}%"
              f"  predicted {100*(b['predicted_s']/a['predicted_s']-1):+5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
