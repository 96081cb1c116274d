#!/usr/bin/env python3
"""DeepSeek-V3's measured DualPipe F&B pair against the simulated one (issue 15).

usage: validation/deepseek_pair.py TRAIN_JSON MFUSIM_TRACE_JSON

TRAIN_JSON: train.json of github.com/deepseek-ai/profile-data (commit de0b460f9d5abee8ea5c88666e4b0a4f72ce0201): a
PyTorch-profiler trace of one forward chunk and one backward chunk overlapped as a DualPipe F&B pair on one
H800, each chunk 4 MoE layers, EP 64, TP 1, 4K sequence, balanced routing, no PP communication (its README).
MFUSIM_TRACE_JSON: `build/mfusim run scenarios/2048xh800_deepseek_v3.toml --trace FILE` (the same layout:
ranks 1-14 hold two stages of 4 MoE layers each).
Prints the measured pair (the compute stream's span and busy time; the DeepEP stream's busy time) and the
simulated steady-state pair on middle pipeline ranks (median interval between successive F&B pair starts
on the compute stream, and the compute busy time within it).
"""
import json
import statistics
import sys


def events(path):
    d = json.load(open(path))
    return d["traceEvents"] if isinstance(d, dict) else d


def measured(path):
    ev = [e for e in events(path) if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_tid = {}
    for e in ev:
        by_tid.setdefault(e.get("tid"), []).append(e)
    compute = max(by_tid.values(), key=len)          # the stream with the most kernels
    span = max(e["ts"] + e["dur"] for e in compute) - min(e["ts"] for e in compute)
    busy = sum(e["dur"] for e in compute)
    others = sorted(((sum(e["dur"] for e in v), t) for t, v in by_tid.items() if v is not compute), reverse=True)
    return span / 1e3, busy / 1e3, (others[0][0] / 1e3 if others else 0.0)


def simulated(path, ranks=range(1, 15)):
    ev = events(path)
    out = []
    for rank in ranks:
        names = {e["tid"]: e["args"]["name"] for e in ev
                 if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == rank}
        comp = sorted((e for e in ev if e.get("ph") == "X" and e.get("pid") == rank and names.get(e["tid"]) == "compute"),
                      key=lambda e: e["ts"])
        starts = [i for i, e in enumerate(comp) if " + " in e["name"]]   # "F mb.. chunk.. + B mb.. chunk.."
        for a, b in zip(starts, starts[1:]):
            interval = comp[b]["ts"] - comp[a]["ts"]
            busy = sum(e["dur"] for e in comp[a:b])
            out.append((interval / 1e3, busy / 1e3))
    if not out:
        sys.exit(f"{path}: no F&B pairs on ranks {list(ranks)}")
    return statistics.median(x[0] for x in out), statistics.median(x[1] for x in out), len(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    span, busy, comm = measured(sys.argv[1])
    sim_interval, sim_busy, n = simulated(sys.argv[2])
    print(f"measured  (DeepSeek profile): pair span {span:7.1f} ms, compute busy {busy:7.1f} ms, DeepEP stream busy {comm:7.1f} ms")
    print(f"simulated (median of {n} pairs, ranks 1-14): pair interval {sim_interval:7.1f} ms, compute busy {sim_busy:7.1f} ms")
    print(f"simulated / measured: pair {sim_interval / span - 1:+.1%}, compute busy {sim_busy / busy - 1:+.1%}")


if __name__ == "__main__":
    main()
