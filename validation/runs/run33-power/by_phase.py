"""Median SM clock, board power and temperature over the second half of each phase of power.py."""
import csv, datetime, statistics, sys
R = sys.argv[1]
rows = []
for r in csv.reader(open(f"{R}/clocks.csv")):
    try:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        rows.append((t, float(r[1]), float(r[3]), float(r[4])))
    except (ValueError, IndexError):
        pass
ph = [(float(l.split()[0]), l.split()[1]) for l in open(f"{R}/power_phases.txt")]
ph.append((ph[-1][0] + 2, "end"))
tf = {}
for r in csv.DictReader(open(f"{R}/power.csv")):
    tf[r["case"]] = r
print("phase            sms  samples  sm_mhz  power_w  temp_c  tflops  tflops/(sms*GHz)")
for (t0, n), (t1, _) in zip(ph, ph[1:]):
    if n == "idle": continue
    s = [x for x in rows if (t0 + t1) / 2 <= x[0] < t1]
    if not s: continue
    mhz = statistics.median(x[1] for x in s)
    r = tf.get(n, {})
    sms = int(r.get("sms", 0) or 0); tfl = float(r.get("tflops", 0) or 0)
    eff = tfl / (sms * mhz / 1000) if sms and mhz else 0
    print(f"{n:15s} {sms:4d} {len(s):8d} {mhz:7.0f} {statistics.median(x[2] for x in s):8.1f} "
          f"{statistics.median(x[3] for x in s):7.0f} {tfl:7.1f} {eff:10.3f}")
