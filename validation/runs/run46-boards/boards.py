#!/usr/bin/env python3
"""Run 46's table: per board (serial), the mean layer and GEMM times and the clock, power and temperature while
each ran; then the spread across boards and the expected slowest of N boards (docs/cost-model.md 2g).

Usage: boards.py RESULTS_DIR [--toml]   (RESULTS_DIR holds call*/ folders, each one device call's $OUT)
The clock samples are assigned to the workloads by time from the first sample at > 300 W (the warm-up's start):
15 s warm-up, then 25 s of the layer, then 25 s of the GEMM (jitter.py --warmup 15 --duration 25); the first and
last 2 s of each window are dropped.
"""
import csv, glob, os, re, statistics, sys
from datetime import datetime

root = sys.argv[1]
rows = []
for d in sorted(glob.glob(os.path.join(root, "call*")), key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)))):
    q = open(os.path.join(d, "nvidia-smi-q.txt")).read()
    serial = re.search(r"Serial Number\s+:\s+(\d+)", q).group(1)
    summ = open(os.path.join(d, "summary.txt")).read()
    layer = float(re.search(r"layer70b_tp8: \d+ units, mean ([\d.]+) ms", summ).group(1))
    gemm = float(re.search(r"gemm_fc1_70b_tp8: \d+ units, mean ([\d.]+) ms", summ).group(1))
    samples = []
    with open(os.path.join(d, "clocks.csv")) as f:
        r = csv.reader(f)
        next(r)
        for row in r:
            try:
                t = datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
                sm, p, temp = float(row[1].split()[0]), float(row[3].split()[0]), float(row[4])
            except (ValueError, IndexError):
                continue
            samples.append((t, sm, p, temp))
    t0 = next(t for t, sm, p, temp in samples if p > 300)
    def window(a, b):
        w = [(sm, p, temp) for t, sm, p, temp in samples if t0 + a + 2 <= t < t0 + b - 2]
        return tuple(statistics.fmean(x[i] for x in w) for i in range(3)) if w else (float("nan"),) * 3
    rows.append((os.path.basename(d), serial, layer, gemm, window(15, 40), window(40, 65)))

print("call    serial          layer ms  GEMM ms   layer: MHz    W     C   GEMM: MHz    W     C")
for name, serial, layer, gemm, wl, wg in rows:
    print(f"{name:7s} {serial}  {layer:.4f}   {gemm:.4f}   {wl[0]:7.0f} {wl[1]:5.0f} {wl[2]:4.0f}   {wg[0]:7.0f} {wg[1]:5.0f} {wg[2]:4.0f}")
for label, col in (("layer", 2), ("GEMM", 3)):
    v = [r[col] for r in rows]
    m = statistics.fmean(v)
    print(f"{label}: {len(v)} boards, mean {m:.4f} ms, sd {statistics.stdev(v) / m * 100:.2f}% of the mean, "
          f"range {min(v) / m:.4f}-{max(v) / m:.4f}, slowest / mean {max(v) / m:.4f}")
lc = [r[4][0] for r in rows]
print(f"layer SM clock: sd {statistics.stdev(lc) / statistics.fmean(lc) * 100:.2f}% of the mean {statistics.fmean(lc):.0f} MHz")
# correlation of the layer time with the board's temperature and clock
def corr(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5
lt = [r[2] for r in rows]
print(f"corr(layer time, layer SM clock) {corr(lt, lc):+.2f}; corr(layer time, temperature) {corr(lt, [r[4][2] for r in rows]):+.2f}; "
      f"corr(layer time, GEMM time) {corr(lt, [r[3] for r in rows]):+.2f}")
