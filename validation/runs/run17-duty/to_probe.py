#!/usr/bin/env python3
"""duty.csv (run 17) -> probe [[gemm_duty]] tables (duty, gemm_us) for `mfusim calibrate`.
Only the GEMM-and-add cases (the attention cases are reported in the README, not fitted).
Usage: to_probe.py results/duty.csv > results/gemm_duty.toml"""
import csv, sys
print("# run 17 (validation/runs/run17-duty): a 4096x8192x8192 bf16 GEMM's median time in a loop of n_g GEMMs")
print("# and n_m memory-bound adds, against the GEMM share of the loop's GPU time (duty)")
for r in csv.DictReader(open(sys.argv[1])):
    if not r["case"].startswith("gemm") or float(r["gemm_us"]) <= 0:
        continue
    print(f'\n[[gemm_duty]]\ncase = "{r["case"]}"\nduty = {float(r["duty"])}\ngemm_us = {float(r["gemm_us"])}')
