"""Run 33's phases as the probe's [[gemm_power]] rows (appended to hardware/calibration/h200-probe.toml).

usage: python3 to_probe.py RESULTS_DIR > rows.toml
Per phase of power.py (bf16 and fp8, the repeated full-GPU phase kept as a sample of its own): the median
SM clock and board power over the second half of the phase (nvidia-smi every 100 ms), the SMs the
GEMM ran on, and the board's power limit (env.txt: nvidia-smi -q -d POWER, 'Current Power Limit').
"""
import csv, datetime, re, statistics, sys
R = sys.argv[1]
limit = None
for line in open(f"{R}/env.txt"):
    m = re.search(r"Current Power Limit\s*:\s*([\d.]+)\s*W", line)
    if m:
        limit = float(m.group(1)); break
if limit is None: sys.exit("no 'Current Power Limit' in env.txt")
smp = []
for r in csv.reader(open(f"{R}/clocks.csv")):
    try:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        smp.append((t, float(r[1]), float(r[3])))
    except (ValueError, IndexError):
        pass
ph = [(float(l.split()[0]), l.split()[1]) for l in open(f"{R}/power_phases.txt")]
ph.append((ph[-1][0] + 2, "end"))
rows = {r["case"]: r for r in csv.DictReader(open(f"{R}/power.csv"))}
print("# run 33 (validation/runs/run33-power): a GEMM loop on `sms` SMs (cuBLASLt SM carve-out), the median SM clock")
print("# and board power over the second half of each 8 s phase, under the board's power limit")
for (t0, n), (t1, _) in zip(ph, ph[1:]):
    if n == "idle" or n not in rows: continue
    s = [x for x in smp if (t0 + t1) / 2 <= x[0] < t1]
    if not s: continue
    r = rows[n]
    print(f"\n[[gemm_power]]\ncase = \"{n}\"\ndtype = \"{r['dtype']}\"\nsms = {r['sms']}\n"
          f"clock_mhz = {statistics.median(x[1] for x in s):.0f}\npower_w = {statistics.median(x[2] for x in s):.1f}\n"
          f"limit_w = {limit:.0f}\ntflops = {r['tflops']}")
