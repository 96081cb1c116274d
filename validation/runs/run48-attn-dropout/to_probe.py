#!/usr/bin/env python3
"""Run 48's pairs as probe rows: one [[attention_dropout]] table per (backend, case, pass), the call's time
with dropout 0.1 (`seconds`) and without (`seconds_no_dropout`), for `mfusim calibrate` (hardware/calibration.h
AttentionFit, the dropout fit). Appended to hardware/calibration/h200-probe.toml and h200-probe-sustained.toml.
Usage: to_probe.py results/attn_dropout.csv > rows.toml
"""
import csv, sys

IMPL = {"flash": "flash", "cudnn": "cudnn_fused"}   # as the [[attention]] rows name them


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    base = {(r["backend"], r["case"], r["pass"]): float(r["ms"]) for r in rows if float(r["dropout"]) == 0}
    print("\n# Run 48 (validation/runs/run48-attn-dropout): fused causal self-attention with dropout on the\n"
          "# probabilities, through torch SDPA with one backend forced, bf16, head_dim 128, 10 calls back to back\n"
          "# between CUDA events, median of 9; `seconds` with dropout, `seconds_no_dropout` the same call without.")
    for r in rows:
        p = float(r["dropout"])
        if p == 0:
            continue
        t0 = base[(r["backend"], r["case"], r["pass"])]
        print(f"""
[[attention_dropout]]
impl = "{IMPL[r['backend']]}"
pass = "{r['pass']}"
batch = {r['b']}
heads = {r['H']}
seq = {r['S']}
head_dim = 128
causal = true
dropout = {p}
seconds = {float(r['ms']) * 1e-3:.6g}
seconds_no_dropout = {t0 * 1e-3:.6g}
timing = "back_to_back"
source = "run 48, {r['case']} (validation/runs/run48-attn-dropout/results/attn_dropout.csv)\"""")


if __name__ == "__main__":
    main()
