#!/usr/bin/env python3
"""Writes validation/xla/matmul.csv and validation/xla/collectives.csv from OpenXLA's
published GPU performance tables (validation/xla/SOURCES.md says which files, at which
commits, and how XLA measured them). Every number is copied from the table; the only
computed column is collectives.csv's tensor_bytes (the size XLA's generator swept, recovered
from the instruction's shape: elements x 4 bytes for F32, x the group size for a
reduce-scatter, whose instruction shape is the scattered output).

usage: make_csv.py MATMUL_TXTPB COLLECTIVE_TXTPB MATMUL_H@b2766086 MATMUL_H@f3253733
  MATMUL_TXTPB      xla/service/gpu/model/default_matmul_perf_table.txtpb
  COLLECTIVE_TXTPB  xla/service/gpu/model/default_collective_perf_table.txtpb
  MATMUL_H@...      xla/service/gpu/model/matmul_interpolator_data.h at the two earlier
                    H100 revisions (bf16 only), kept to show the measurement's repeatability
"""
import csv, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICES = {"sm_90": "H100", "sm_100_B200": "B200"}
DTYPES = {"bf16xbf16->bf16": "bf16", "f8e4m3fnxf8e4m3fn->bf16": "fp8_e4m3"}


def parse_matmul(path):
    rows, dev, cur = [], None, None
    for line in open(path):
        s = line.strip()
        m = re.match(r'key: "([^"]+)"$', s)
        if m and "->" not in m.group(1):
            dev = m.group(1)
            continue
        m = re.match(r"(b|m|n|k): (\d+)$", s)
        if m:
            if m.group(1) == "b":
                cur = {"dev": dev, "b": int(m.group(2)), "f": {}}
                rows.append(cur)
            else:
                cur[m.group(1)] = int(m.group(2))
            continue
        m = re.match(r'flops \{ key: "([^"]+)" value: (\d+) \}', s)
        if m:
            cur["f"][m.group(1).lower()] = int(m.group(2))
    return rows


def parse_collectives(path):
    rows, dev, cur = [], None, None
    for line in open(path):
        s = line.strip()
        if line.startswith("  key: "):
            dev = s.split('"')[1]
            continue
        if s.startswith("opcode:"):
            cur = {"dev": dev, "op": s.split('"')[1], "dims": [], "et": None, "in_shape": True}
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r"element_type: (\w+)", s)
        if m and cur["et"] is None:
            cur["et"] = m.group(1)
        m = re.match(r"dimensions: (\d+)$", s)
        if m and cur["in_shape"]:
            cur["dims"].append(int(m.group(1)))
        if s.startswith("layout"):
            cur["in_shape"] = False
        for key in ("num_replica_groups", "num_devices_per_group"):
            m = re.match(key + r": (\d+)", s)
            if m:
                cur[key] = int(m.group(1))
        m = re.match(r"network_throughput_bytes_per_sec: (\d+)", s)
        if m:
            cur["bw"] = int(m.group(1))
    return rows


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    mm, coll, rev_b276, rev_f325 = sys.argv[1:]
    out = []
    for r in parse_matmul(mm):
        if r["dev"] not in DEVICES:
            continue
        for key, dt in DTYPES.items():
            if key in r["f"]:
                out.append([DEVICES[r["dev"]], "71feedd", r["b"], r["m"], r["n"], r["k"], dt, r["f"][key]])
    for path, rev in ((rev_b276, "b276608"), (rev_f325, "f325373")):
        for r in parse_matmul(path):
            if r["dev"] == "sm_90" and "bf16xbf16->bf16" in r["f"]:
                out.append(["H100", rev, r["b"], r["m"], r["n"], r["k"], "bf16", r["f"]["bf16xbf16->bf16"]])
    with open(os.path.join(HERE, "matmul.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gpu", "revision", "b", "m", "n", "k", "dtype", "flops_per_s"])
        w.writerows(out)
    out = []
    for r in parse_collectives(coll):
        if r["dev"] not in DEVICES or r["op"] == "collective-permute":
            continue
        assert r["et"] == "F32" and len(r["dims"]) == 1, r
        gs = r["num_devices_per_group"]
        tensor = r["dims"][0] * 4 * (gs if r["op"] == "reduce-scatter" else 1)
        out.append([DEVICES[r["dev"]], r["op"], r["num_replica_groups"], gs, "f32", tensor, r["bw"]])
    out.sort(key=lambda x: (x[0], x[1], -x[3], x[5]))
    with open(os.path.join(HERE, "collectives.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gpu", "op", "groups", "group_size", "dtype", "tensor_bytes", "throughput_bytes_per_s"])
        w.writerows(out)


if __name__ == "__main__":
    main()
