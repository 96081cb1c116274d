#!/usr/bin/env python3
"""Assemble a probe file whose GEMM samples ([[gemm]], bf16 and fp8) come from run 16 (the sustained
power state) and whose other families (attention, SDPA, memory, launch, collectives) come from an
earlier probe file, for `mfusim calibrate` (docs/cost-model.md §2d says why each family is taken from
where it is); EXTRA fragments (run 17's [[gemm_duty]]) are appended as they are.
Usage: assemble.py SUSTAINED_PROBE.toml OTHER_PROBE.toml OUT.toml [EXTRA.toml ...]
"""
import re, sys

def split_tables(text):
    """(head before the first table, [(header line, body)]) of a TOML file, at top-level table headers."""
    parts = re.split(r'(?m)^(\[\[?[A-Za-z0-9_.]+\]\]?)[^\n]*\n', text)
    head, rest = parts[0], parts[1:]
    return head, [(rest[i], rest[i + 1]) for i in range(0, len(rest), 2)]

sus_path, other_path, out_path = sys.argv[1:4]
sus_head, sus_tables = split_tables(open(sus_path).read())
oth_head, oth_tables = split_tables(open(other_path).read())
out = ["# Assembled by validation/runs/run16-sustained-probe/assemble.py:\n",
       f"#   [[gemm]] (bf16 and fp8) from {sus_path} (probe --sustained 20, run 16)\n",
       f"#   every other family from {other_path}\n", sus_head]
for h, body in sus_tables:
    if h in ("[provenance]", "[[gemm]]"):
        out.append(h + "\n" + body)
for h, body in oth_tables:
    if h not in ("[provenance]", "[[gemm]]"):
        out.append(h + "\n" + body)
for extra in sys.argv[4:]:
    out.append(f"\n# appended from {extra}\n" + open(extra).read())
open(out_path, "w").write("".join(out))
