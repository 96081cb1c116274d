#!/usr/bin/env python3
"""Regenerates the two generated tables at the end of docs/fsdp.md ("### Tuning half" and "### Held-out
half") from validate_fsdp's markdown. Prose above them is left as it is.
Usage (repo root): build/validation/validate_fsdp --half tuning --markdown > /tmp/t.md
                   build/validation/validate_fsdp --half heldout --markdown > /tmp/h.md
                   tools/refresh-fsdp-doc.py /tmp/t.md /tmp/h.md docs/fsdp.md"""
import sys

tuning, heldout, doc = sys.argv[1:4]
d = open(doc).read()
heads = ("### Tuning half\n", "### Held-out half\n")
for h in heads:
    if d.count(h) != 1:
        sys.exit(f"{doc}: expected one '{h.strip()}' heading")
for f in (tuning, heldout):
    if "| row |" not in open(f).read():
        sys.exit(f"{f}: no validate_fsdp markdown table")
a, b = d.index(heads[0]), d.index(heads[1])
if b < a:
    sys.exit(f"{doc}: the held-out table must follow the tuning table")
tail = d[b + len(heads[1]):]
if "\n## " in tail or "\n### " in tail:
    sys.exit(f"{doc}: the held-out table must be the last section")
body = lambda f: "\n" + open(f).read().strip() + "\n"
open(doc, "w").write(d[:a] + heads[0] + body(tuning) + "\n" + heads[1] + body(heldout))
