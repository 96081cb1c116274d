#!/usr/bin/env python3
"""The routed experts' load on one EP rank of DeepSeek's published training profile, and the slowest of 64.

usage: validation/deepseek_load.py TRAIN_JSON [--csv OUT]

TRAIN_JSON is train.json of github.com/deepseek-ai/profile-data (commit
de0b460f9d5abee8ea5c88666e4b0a4f72ce0201): one DualPipe F&B pair on one H800 of a DeepSeek-V3 run (EP 64, 4K
tokens per micro-batch, 4 MoE layers per chunk). Its README: "we simulate an absolutely balanced MoE routing
strategy for profiling".

Each routed-expert pass of the trace quantises its token-expert rows once with DeepSeek's 1x128 kernel
(`per_token_cast_to_fp8_with_channels`, one block of 128 threads per row), so the kernel's grid is the rows this
rank's 4 experts received in that (layer, micro-batch), padded per expert for DeepGEMM's grouped layout (every
count is a multiple of 128). The forward chunk gives 4 layers of one micro-batch, the backward chunk 4 of
another: 8 samples. (The shared expert's calls run over the micro-batch's 4,096 tokens and are left out.)
A check in the same trace: each pass's expansion of the received tokens into the experts' rows
(`expand_to_fused_with_scales_impl`, the last one before the sample, 16 rows per block) has 1/16 of the rows
as its grid (the CSV's expand_grid; tests/moe/test_profile_imbalance.cpp checks it). The routed grouped
GEMMs' times follow the rows (forward up and down projections 2.69-3.31 ms, correlation 0.98).

Balanced in expectation is 4,096 tokens x 8 experts per token x 64 ranks / 256 experts x 4 experts per rank =
32,768 rows. What the samples say about the EP group: if each of the 64 ranks' rows in a (layer, micro-batch)
spread as this rank's do (a normal of the samples' coefficient of variation), the slowest rank, which every
rank's combine waits for, carries 1 + CV x E[max of 64 standard normals] of the mean. That is `moe.imbalance`
of scenarios/2048xh800_deepseek_v3.toml (tests/moe/test_profile_imbalance.cpp recomputes it from the CSV).
The 90% range follows from the sample standard deviation's chi-square interval (7 degrees of freedom): sampling
error only, not the normal or the independence assumption, and the figure describes the profile's simulated
routing, not the production run's.
"""
import json
import math
import statistics
import sys

KERNEL = "per_token_cast_to_fp8_with_channels<"
TOKENS = 4096
EP = 64


def phi_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def expected_max_normals(n):
    """E[max of n standard normals] = lo + int (1 - Phi^n), Simpson over [-9, 9]."""
    lo, hi, k = -9.0, 9.0, 2048
    h = (hi - lo) / k
    s = 0.0
    for i in range(k + 1):
        w = 1 if i in (0, k) else (4 if i % 2 else 2)
        s += w * (1 - phi_cdf(lo + i * h) ** n)
    return lo + s * h / 3


def samples(trace):
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ev.sort(key=lambda e: e["ts"])
    t0 = ev[0]["ts"]
    out = []
    expand = 0
    for e in ev:
        grid = (e.get("args", {}).get("grid") or [0])[0]
        if "expand_to_fused_with_scales" in e["name"]:
            expand = grid
        if KERNEL in e["name"] and grid != TOKENS:
            out.append(((e["ts"] - t0) / 1000.0, grid, e["dur"], expand))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = samples(json.load(open(sys.argv[1])))
    if len(rows) != 8:
        sys.exit(f"deepseek_load.py: expected 8 routed-expert passes, found {len(rows)}")
    if "--csv" in sys.argv:
        with open(sys.argv[sys.argv.index("--csv") + 1], "w") as f:
            f.write("ms_from_trace_start,rows,kernel_us,expand_grid\n")
            for t, g, d, x in rows:
                f.write(f"{t:.2f},{g},{d},{x}\n")
    counts = [g for _, g, _, _ in rows]
    mean, sd = statistics.mean(counts), statistics.stdev(counts)
    cv = sd / mean
    e64 = expected_max_normals(EP)
    print("rows per (layer, micro-batch):", ", ".join(str(c) for c in counts))
    print(f"mean {mean:.0f} (balanced in expectation {TOKENS * 8 * EP // 256 * 4}), sd {sd:.0f}, CV {100 * cv:.2f}%")
    print(f"E[max of {EP} standard normals] = {e64:.4f}")
    # chi-square quantiles for 7 degrees of freedom at 5% and 95%
    lo, hi = cv * math.sqrt(7 / 14.067), cv * math.sqrt(7 / 2.167)
    print(f"slowest of {EP} ranks / mean = {1 + cv * e64:.3f} (90% range {1 + lo * e64:.3f} - {1 + hi * e64:.3f})")


if __name__ == "__main__":
    main()
