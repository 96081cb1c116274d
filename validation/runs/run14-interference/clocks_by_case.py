#!/usr/bin/env python3
"""Joins the nvidia-smi samples (clocks.csv, 100 ms, device clock in UTC) to the measurement windows
(interference_windows.csv, host epoch seconds): per window kind (gemm_alone / gemm_case / side_alone),
shape, case and k, the median SM clock, the median instantaneous power and the most frequent
clocks-event reason (0x4 = software power cap, 0x1 = GPU idle) over the samples inside the windows of
all passes. Runs without a GPU: clocks_by_case.py DIR  (writes DIR/clocks_by_case.csv)."""
import csv, datetime, statistics, sys
from collections import Counter, defaultdict

d = sys.argv[1]
samples = []
with open(f"{d}/clocks.csv") as f:
    r = csv.reader(f)
    head = [h.strip() for h in next(r)]
    i_sm = head.index("clocks.current.sm [MHz]")
    i_pw = head.index("power.draw.instant [W]") if "power.draw.instant [W]" in head else head.index("power.draw [W]")
    i_rs = [i for i, h in enumerate(head) if h.endswith("reasons.active")][0]
    for row in r:
        try:
            t = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
            samples.append((t, float(row[i_sm].split()[0]), float(row[i_pw].split()[0]), row[i_rs].strip()))
        except (ValueError, IndexError):
            pass
groups = defaultdict(list)
with open(f"{d}/interference_windows.csv") as f:
    for w in csv.DictReader(f):
        t0, t1 = float(w["host_t0"]), float(w["host_t1"])
        groups[(w["what"], w["shape"], w["case"], int(w["k"]))] += [s for s in samples if t0 <= s[0] <= t1]
out = []
for (what, shape, case, k), ss in sorted(groups.items()):
    if not ss:
        out.append(dict(what=what, shape=shape, case=case, k=k, samples=0, sm_mhz="", power_w="", reason=""))
        continue
    out.append(dict(what=what, shape=shape, case=case, k=k, samples=len(ss),
                    sm_mhz=statistics.median(s[1] for s in ss), power_w=round(statistics.median(s[2] for s in ss), 1),
                    reason=Counter(s[3] for s in ss).most_common(1)[0][0].replace("0x000000000000000", "0x")))
with open(f"{d}/clocks_by_case.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
    w.writeheader(); w.writerows(out)
for o in out:
    print(",".join(str(v) for v in o.values()))
