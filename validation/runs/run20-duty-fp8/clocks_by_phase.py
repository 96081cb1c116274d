"""Median SM clock and board power per phase of duty.py (nvidia-smi samples in R/clocks.csv)."""
import csv, datetime, statistics, sys
R = sys.argv[1]
rows = []
for r in csv.reader(open(f"{R}/clocks.csv")):
    try:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        rows.append((t, float(r[1]), float(r[3])))
    except (ValueError, IndexError):
        pass
ph = [(float(l.split()[0]), l.split()[1]) for l in open(f"{R}/duty_fp8_phases.txt")]
ph.append((ph[-1][0] + 2, "end"))
print("phase            s    samples  sm_mhz_median  power_w_median   (second half of each phase)")
for (t0, n), (t1, _) in zip(ph, ph[1:]):
    if n == "idle": continue
    s = [x for x in rows if (t0 + t1) / 2 <= x[0] < t1]
    if s:
        print(f"{n:14s} {t1 - t0:5.1f} {len(s):8d} {statistics.median(x[1] for x in s):14.0f} {statistics.median(x[2] for x in s):15.0f}")
