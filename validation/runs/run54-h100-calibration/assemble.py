#!/usr/bin/env python3
"""Assemble hardware/calibration/h100-probe.toml (run 54) for `mfusim calibrate`.

Every family the shipped Hopper file (hardware/calibration/h200-probe.toml) was fitted from is taken from the
H100's own measurement where run 54 made it, with the same script:
  [provenance], [[gemm]] (bf16, fp8), materialised [[attention]], [[memory]] (the probe's), [[launch]],
  [[collective]], [nccl]                      <- the probe (run 1's command)          results/h100-probe.toml
  [[attention]] SDPA singles                  <- attention_sdpa.py (run 1)            results/sdpa.toml
  [[attention]] cuDNN back to back            <- attention_sdpa.py --back-to-back 5   results/sdpa_b2b_cudnn.toml
  [[attention]] FlashAttention-2 back to back <- ... --backend flash (run 31)         results/sdpa_b2b_fa2.toml
  [[memory]] eager PyTorch kernel families    <- kernel_bw.py (run 4 / run 8)         results/kernel_bw.toml
  [[slowest_of_n]]                            <- run 40's jitter.py + slowest_of_n.py results/jitter/
The rest is carried from the H200 file, as the shipped calibration has priced the H100 until now:
  used as ratios (unchanged): [[attention_dropout]], [[attention_same_run]], [[grouped_gemm]] (rates relative to
  one dense GEMM), [[board]] (each board's time over the boards' mean);
  [[gemm_power]]: the H200's absolute clock and power samples (run 33), not re-measured; its fit (1,491 MHz on
  all SMs at 700 W) prices only GEMMs under a power limit below 700 W or on fewer SMs, and is the H200's;
  Triton attention (llm-foundry's, run 42/43) and torch.topk (run 28: SM-bound, the same SMs and clocks):
  unchanged, as the cost model already carries them;
  the in-step trace chains of run 8 (rope / SwiGLU eager and compiled, memory-bound): seconds scaled by the
  datasheet HBM ratio 4.8 / 3.35, which is how the cost model carried them to the H100 before (run 54 measured
  bandwidth-bound eager kernels at 1.32-1.43x the H200's time, so these are 0-8% slow, not re-measured).
Since run 55 (validation/runs/run55-h100-carried), a fourth argument, run 55's results directory, takes three of
the carried families from the H100 instead: [[grouped_gemm]] (runs 14c / 44 / 45's methods on the H100),
[[attention_dropout]] (run 48's script) and [[gemm_power]] (run 33's script); the shipped file is built with it.
Usage: assemble.py RESULTS_DIR H200_PROBE.toml OUT.toml [RUN55_RESULTS_DIR]
       assemble.py --singles H100_PROBE.toml OUT.toml   (the same file without the back-to-back attention, its
         dropout and same-run rows: what `build/mfusim_calibrate OUT.toml --out hardware/calibration/h100-fa2.toml
         --fused-attention flash` fits for the single-GPU eager steps, as h200-fa2.toml is fitted from
         h200-probe-run8.toml)
"""
import os, re, sys

def split_tables(text):
    parts = re.split(r'(?m)^(\[\[?[A-Za-z0-9_.]+\]\]?)[^\n]*\n', text)
    return parts[0], [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]

if sys.argv[1] == "--singles":
    head, tables = split_tables(open(sys.argv[2]).read())
    drop = {"[sdpa_back_to_back_provenance]", "[sdpa_fa2_back_to_back_provenance]", "[triton_flash_provenance]",
            "[triton_flash_check]", "[[attention_dropout]]", "[[attention_same_run]]"}
    out = [head] + [h + "\n" + b for h, b in tables if not ((h == "[[attention]]" and "back_to_back" in b) or h in drop)]
    open(sys.argv[3], "w").write("".join(out))
    sys.exit(0)

res, h200_path, out_path = sys.argv[1:4]
r55 = sys.argv[4] if len(sys.argv) > 4 else None

def kv(body):
    return dict(re.findall(r'(?m)^(\w+)\s*=\s*(.*?)\s*(?:#.*)?$', body))

def strip_comments(body):
    # A table body ends where the next header starts; comment lines between tables belong to no table.
    return "\n".join(l for l in body.split("\n") if not l.startswith("#")).rstrip("\n") + "\n\n"

def read(name):
    p = os.path.join(res, name)
    if not os.path.exists(p) or os.path.getsize(p) == 0:
        sys.exit(f"assemble.py: {p} is missing or empty")
    return split_tables(open(p).read())

HBM = 4.8 / 3.35
out = [f"# mfusim probe output (SPEC.md §6), assembled by validation/runs/run54-h100-calibration/assemble.py\n",
       "# from run 54 (one H100 SXM, results in validation/runs/run54-h100-calibration/results/) and, for the\n",
       "# families run 54 did not measure, hardware/calibration/h200-probe.toml (see the script's docstring).\n"]
if r55:
    out[1:] = ["# from runs 54 and 55 (one H100 SXM; validation/runs/run54-h100-calibration/results/ and\n",
               "# validation/runs/run55-h100-carried/results/) and, for the families neither measured,\n",
               "# hardware/calibration/h200-probe.toml (see the script's docstring).\n"]
head, tables = read("h100-probe.toml")
out.append(head.split("\n", 1)[1] if head.startswith("#") else head)
for h, b in tables:
    out.append(h + "\n" + strip_comments(b))
for name, label in (("sdpa.toml", "SDPA singles"), ("sdpa_b2b_cudnn.toml", "cuDNN fused attention, back to back"),
                    ("sdpa_b2b_fa2.toml", "FlashAttention-2, back to back"), ("kernel_bw.toml", "eager PyTorch kernel families")):
    h0, tb = read(name)
    out.append(f"\n# ---- {label}: run 54, {name} ----\n")
    for h, b in tb:
        if name == "sdpa_b2b_fa2.toml" and h == "[sdpa_back_to_back_provenance]":
            h = "[sdpa_fa2_back_to_back_provenance]"
        out.append(h + "\n" + strip_comments(b))
sl = open(os.path.join(res, "slowest_of_n.toml")).read()
out.append("\n# ---- run 54's jitter.py (layer70b_tp8, 20 s at the capped state): validation/runs/run40-interval-jitter/slowest_of_n.py ----\n" + sl)

_, h2 = split_tables(open(h200_path).read())
carried = {"[[attention_dropout]]", "[[attention_same_run]]", "[[grouped_gemm]]", "[[board]]", "[[gemm_power]]",
           "[triton_flash_provenance]", "[triton_flash_check]"}
if r55:
    import subprocess
    carried -= {"[[grouped_gemm]]", "[[attention_dropout]]", "[[gemm_power]]"}
    runs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    src = "validation/runs/run55-h100-carried/results"
    _, gg = split_tables(open(os.path.join(r55, "call1/grouped/grouped_gemm.toml")).read())
    out.append(f"\n# ---- run 55 ({src}/call1/grouped): expert GEMMs on the H100, equal routing, runs 14c / 44 / 45's methods\n"
               "# (validation/runs/run14-interference/grouped_gemm.py): bf16 \"grouped\" / \"dense\" ([gemm_grouped]) and the\n"
               "# fp8 per-expert loops with their one fp8 GEMM ([gemm_grouped_fp8], `run` pairs them) ----\n")
    for h, b in gg:
        d = kv(b)
        if h != "[[grouped_gemm]]" or d.get("dist") != '"equal"':
            continue
        m = d.get("method", "").strip('"')
        if m in ("grouped", "dense") and d.get("dtype") == '"bf16"':
            out.append(h + "\n" + strip_comments(b))
        elif m in ("fp8_loop", "fp8_loop4", "fp8_dense"):
            out.append(h + "\nrun = 55\n" + strip_comments(b))
    drop = subprocess.run([sys.executable, os.path.join(runs, "run48-attn-dropout/to_probe.py"),
                           os.path.join(r55, "call1/dropout/attn_dropout.csv")], check=True, capture_output=True, text=True).stdout
    drop = drop.replace("# Run 48 (validation/runs/run48-attn-dropout):", f"# Run 55 ({src}/call1/dropout), run 48's script on the H100:")
    drop = drop.replace('source = "run 48, ', 'source = "run 55 on the H100, ').replace(
        "validation/runs/run48-attn-dropout/results/attn_dropout.csv", f"{src}/call1/dropout/attn_dropout.csv")
    out.append("\n# ---- run 55: attention dropout inside the fused call ----" + drop)
    power = subprocess.run([sys.executable, os.path.join(runs, "run33-power/to_probe.py"), os.path.join(r55, "call2/power")],
                           check=True, capture_output=True, text=True).stdout
    power = power.replace("# run 33 (validation/runs/run33-power):", f"# run 55 ({src}/call2/power), run 33's script on the H100:")
    power = power.replace("each 8 s phase", "each 6 s phase")
    out.append("\n# ---- run 55: GEMM power against the SMs and the clock ----\n" + power)
out.append("\n# ---- carried from hardware/calibration/h200-probe.toml (one H200): ratios, Triton attention, top-k, "
           "and run 8's trace chains (seconds x 4.8 / 3.35) ----\n")
n_scaled = 0
for h, b in h2:
    d = kv(b)
    if h in carried or (h == "[[attention]]" and d.get("impl") == '"triton_flash"'):
        out.append(h + "\n" + strip_comments(b))
    elif h == "[[memory]]" and d.get("kind") == '"torch:topk"':
        out.append(h + "\n" + strip_comments(b))
    elif h == "[[memory]]" and "shape" not in d and "buffer_sets" not in d:
        sec = float(d["seconds"]) * HBM
        b = re.sub(r'(?m)^seconds\s*=.*$', f"seconds = {sec:.6e}  # H200's x 4.8 / 3.35", b)
        b = re.sub(r'(?m)^bandwidth_gbs\s*=.*$', f"bandwidth_gbs = {float(d['bytes']) / sec * 1e-9:.3f}", b)
        out.append(h + "\n" + strip_comments(b))
        n_scaled += 1
open(out_path, "w").write("".join(out))
print(f"assemble.py: wrote {out_path}; {n_scaled} trace-chain samples scaled by the HBM ratio")
