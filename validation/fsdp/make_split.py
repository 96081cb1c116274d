#!/usr/bin/env python3
"""Deterministic tuning/held-out split of validation/fsdp/rows.csv.

Rule: group rows into strata by (family, source file, peak memory reported or
not); inside each stratum order rows by the SHA-256 hex digest of their id;
the 1st, 3rd, 5th, ... row is `tuning`, the 2nd, 4th, ... row is `heldout`.
No row's value is read, so the split cannot depend on the figures.
Run: python3 validation/fsdp/make_split.py  (rewrites split.csv next to it).
"""
import csv, hashlib, os, collections

here = os.path.dirname(os.path.abspath(__file__))
rows = list(csv.DictReader(open(os.path.join(here, 'rows.csv'), newline='')))
strata = collections.defaultdict(list)
for r in rows:
    src = r['source'].split(' (')[0]
    strata[(r['family'], src, bool(r['peak_mem_gib']))].append(r['id'])
half = {}
for key in sorted(strata):
    for k, rid in enumerate(sorted(strata[key], key=lambda i: hashlib.sha256(i.encode()).hexdigest())):
        half[rid] = 'tuning' if k % 2 == 0 else 'heldout'
with open(os.path.join(here, 'split.csv'), 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['id', 'half'])
    for r in rows:
        w.writerow([r['id'], half[r['id']]])
