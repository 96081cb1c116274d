#!/usr/bin/env python3
"""Regenerates the generated parts of docs/validation-modern.md from validate_modern's markdown:
the "Results" summaries (one block per profile, both halves) and the "Per-row results" table
(datasheet and calibrated side by side). Prose around them is left as it is.
Usage (repo root): build/validation/validate_modern --markdown --profile all > /tmp/vm.md
                   tools/refresh-modern-doc.py /tmp/vm.md docs/validation-modern.md"""
import re, sys

src, doc = sys.argv[1], sys.argv[2]
text = open(src).read()
blocks = re.split(r"^### == profile: (.*?) ==\n", text, flags=re.M)[1:]
profiles = {}
for title, body in zip(blocks[0::2], blocks[1::2]):
    name = title.split()[0]
    rows, summary = body.split("#### tuning half", 1)
    profiles[name] = (title, [l for l in rows.splitlines() if l.startswith("| ") and not l.startswith("| row")],
                      "#### tuning half" + summary.rstrip() + "\n")
for need in ("datasheet", "calibrated"):
    if need not in profiles:
        sys.exit(f"{src}: no '{need}' profile block")

d = open(doc).read()
# Results: from the line after the command line to the next "## " heading.
m = re.search(r"(## Results \(per half; \"rows\" = rows simulated\)\n\n`[^\n]*\n\n)(.*?)(?=^## )", d, flags=re.S | re.M)
if not m:
    sys.exit(f"{doc}: no Results section")
res = ""
for name, (title, _, summary) in profiles.items():
    res += f"**Profile: {title}**\n\n{summary}\n"
d = d[:m.start(2)] + res + d[m.end(2):]

# Per-row table: datasheet and calibrated columns.
def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]
cal = {cells(l)[0]: cells(l) for l in profiles["calibrated"][1]}
out = []
for l in profiles["datasheet"][1]:
    c = cells(l)
    rid, half, pub, pred, err, conf = c[0], c[1], c[2], c[3], c[4], c[5]
    k = cal[rid]
    gpu = rid.split("-")[1]
    out.append(f"| {rid} | {half} | {gpu} | {pub} | {pred} | {err} | {k[3]} | {k[4]} | {k[5] if k[3] != '-' else conf} |")
m = re.search(r"(\| row \| half \| GPU \| published step s[^\n]*\n\|---[^\n]*\n)(.*?)(?=\n\n|\Z)", d, flags=re.S)
if not m:
    sys.exit(f"{doc}: no per-row table")
d = d[:m.start(2)] + "\n".join(out) + d[m.end(2):]
open(doc, "w").write(d)
print(f"{doc}: {len(profiles)} profiles, {len(out)} rows")
