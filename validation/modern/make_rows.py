#!/usr/bin/env python3
"""Writes validation/modern/rows.csv from figures transcribed by hand from the
public sources listed in validation/modern/SOURCES.md. Every number below is
copied from its source; nothing is computed except the fields named in each
row's `derived` column (dp from gpus/(tp*pp*cp), ga from gbs/(dp*mbs), and
tokens/s/GPU from a stated total tokens/s divided by the GPU count)."""
import csv, os

HERE = os.path.dirname(os.path.abspath(__file__))

# --- sources ------------------------------------------------------------------
DGXC = "NVIDIA/dgxc-benchmarking"
DGXC_2411 = f"{DGXC} @35a9aecc8d5b17d99d80f52f38c75ade0dbab7ae (tag v24.11.1)"
DGXC_2504 = f"{DGXC} @741c886025a7665a1d690c05ff12ac29c1be7252 (v25.04)"
DGXC_2505 = f"{DGXC} @60d6fd33ba9554a12b2f0f1f7f62ffd51f220e3d (v25.05.01)"
NEMO_2407 = ("NVIDIA/NeMo @0b8a80ee066472c96fcb1e317b8aa071277b9aa7 "
             "docs/source/performance/performance_summary.md, 'Pretraining' table "
             "(removed in the next commit d31653f7, moved to docs.nvidia.com)")
NEMO_LS_H100 = ("NVIDIA/NeMo @19fadb67b09ba94c55094d34df119d6f9c565068 "
                "docs/source/performance/performance_long_sequence.md, 'LLAMA2-7B (FP8) - H100', 'With CP' columns")
NEMO_LS_B200 = ("NVIDIA/NeMo @14d427f575ee0c3be2719ef7f7c4ecad1b6b45e5 "
                "docs/source/performance/performance_long_sequence.md, 'LLAMA3-8B (FP8) - B200' "
                "(GPU counts from this commit; see SOURCES.md for the later edit)")
MB = ("NVIDIA-NeMo/Megatron-Bridge @067f987df03b8355b03192d88d70f1709fedf51a "
      "docs/performance-summary-archive.md")
LLAMA3 = ("Dubey et al. 2024, 'The Llama 3 Herd of Models', arXiv:2407.21783, Table 4 "
          "(scaling configurations of Llama 3 405B pre-training); same figures on the SC'24 "
          "slide quoted at glennklockwood.com/garden/llama-3.1")

GPU = {
    "H100": "NVIDIA H100 80GB SXM (DGX H100: 8 GPUs/node NVLink4+NVSwitch, InfiniBand NDR)",
    "H100-META": "NVIDIA H100 80GB SXM 700 W (Meta Grand Teton, 8 GPUs/node NVLink; 400 Gb/s RoCE, 3-layer Clos)",
    "B200": "NVIDIA B200 (DGX B200: 8 GPUs/node NVLink5)",
    "GB200": "NVIDIA GB200 (DGX GB200 NVL72: 72 GPUs/NVLink domain)",
    "GB300": "NVIDIA GB300 (DGX GB300 NVL72: 72 GPUs/NVLink domain)",
}

# model name -> (models/*.toml or '', definition needed when no file matches)
MODELS = {
    "llama3-8b": ("llama3-8b", ""),
    "llama3.1-8b": ("llama3-8b", "same shape as llama3-8b (Llama 3.1 8B differs only in RoPE scaling/context)"),
    "llama3-70b": ("llama3-70b", ""),
    "llama3.1-70b": ("llama3.1-70b", ""),
    "llama3.1-405b": ("llama3.1-405b", ""),
    "gpt3-175b": ("gpt3-175b", ""),
    "llama2-7b": ("llama2-7b", ""),
    "llama2-13b": ("llama2-13b", ""),
    "llama2-70b": ("llama2-70b", ""),
    "gpt3-5b": ("", "NeMo GPTConfig5B: layers=24 hidden=4096 heads=32 kv_heads=32 ffn=16384 gelu vocab=NOT STATED (GPT-2 BPE 50257 padded) seq=2048"),
    "gpt3-20b": ("", "NeMo GPTConfig20B: layers=44 hidden=6144 heads=48 kv_heads=48 ffn=24576 gelu vocab=NOT STATED (GPT-2 BPE 50257 padded) seq=2048"),
    "nemotron3-8b": ("", "NeMo Nemotron3Config8B: layers=32 hidden=4096 heads=32 kv_heads=32 ffn=16384 squared-relu (no gating) vocab=256000 (Nemotron tokenizer) untied"),
    "nemotron3-22b": ("", "NeMo Nemotron3Config22B: layers=40 hidden=6144 heads=48 kv_heads=48 ffn=24576 squared-relu vocab=256000 untied"),
    "nemotron4-15b": ("", "NeMo Nemotron4Config15B: layers=32 hidden=6144 heads=48 kv_heads=8 ffn=24576 squared-relu vocab=256000 untied"),
    "nemotron4-340b": ("", "NeMo Nemotron4Config340B: layers=96 hidden=18432 heads=96 kv_heads=8 ffn=73728 squared-relu vocab=256000 untied"),
}

COLS = ["id", "source", "framework", "gpu_type", "hardware", "gpus", "model", "model_file", "model_needed",
        "layers", "moe", "seq", "tp", "pp", "cp", "vpp", "ep", "dp", "fsdp", "mbs", "gbs", "ga",
        "precision", "fp8_recipe", "metric", "value", "step_time_s", "tokens_per_s_per_gpu",
        "model_tflops_per_gpu", "mfu_pct", "series", "derived", "not_stated", "notes"]

rows = []

def add(**kw):
    r = {c: "" for c in COLS}
    r.update({k: ("" if v is None else v) for k, v in kw.items()})
    mf, need = MODELS[r["model"]]
    if not r["model_file"]:
        r["model_file"] = mf
    if not r["model_needed"]:
        r["model_needed"] = need
    if not r["moe"]:
        r["moe"] = "dense"
    rows.append(r)

def layout(gpus, tp, pp, cp, mbs, gbs, ga=None, dp=None):
    """dp and ga: stated if given, else DERIVED."""
    derived = []
    if dp is None:
        dp = gpus // (tp * pp * cp)
        derived.append("dp=gpus/(tp*pp*cp)")
    if ga is None and mbs:
        ga = gbs // (dp * mbs)
        derived.append("ga=gbs/(dp*mbs)")
    return dp, ga, derived

# --- 1. NVIDIA DGX Cloud Benchmarking recipes v24.11.1 (H100, BF16 + FP8) ----------------
def dgxc_series(prefix, src, fw, model, seq, tp, pp, cp, vpp, mbs, ga_stated, gpus, gbs, prec,
                steps, toks, mfus, layers=None, pps=None, vpps=None, note="", fp8_recipe="",
                metric="training step time (s) of the last logged step (README: 'we are using the last training step timing')"):
    for i, g in enumerate(gpus):
        p = pps[i] if pps else pp
        v = vpps[i] if vpps else vpp
        dp, ga, der = layout(g, tp, p, cp, mbs, gbs[i])
        if ga_stated is not None and ga != ga_stated:
            note_ga = f" Stated GA={ga_stated} differs from gbs/(dp*mbs)={ga}."
        else:
            note_ga = ""
        der.append("tokens_per_s_per_gpu=stated total tokens/s / gpus")
        lay = layers[i] if layers else ""
        add(id=f"{prefix}-{prec.upper()}-{g:04d}", source=src, framework=fw, gpu_type=prefix.split("-")[1],
            hardware=GPU[prefix.split("-")[1]], gpus=g, model=model, layers=lay, seq=seq, tp=tp, pp=p, cp=cp,
            vpp=v, ep=1, dp=dp, fsdp=0, mbs=mbs, gbs=gbs[i], ga=ga_stated if ga_stated is not None else ga,
            precision=prec, fp8_recipe=fp8_recipe if prec == "fp8" else "",
            metric=metric,
            value=steps[i], step_time_s=steps[i], tokens_per_s_per_gpu=round(toks[i] / g, 1),
            mfu_pct=mfus[i], series=f"{prefix}-{prec.upper()}",
            derived="; ".join(der), not_stated="ep (no MoE: 1); fsdp (0 = not used per recipe); flash/fused kernel flags",
            notes=(note + note_ga + f" Stated throughput {toks[i]} tokens/s total; MFU as stated (FP8 MFU is against the FP8 peak 1979 TFLOP/s, BF16 against 989).").strip())

FP8_DGXC = "Transformer Engine FP8 (delayed scaling is the NeMo 24.x default; recipe NOT STATED in the README)"

src = f"{DGXC_2411} llama3.1/README_8b.md, 'Expected Performance' tables"
for prec, steps, toks, mfus in [
        ("bf16", [12.91, 13.00, 13.05, 13.08, 13.10], [81222, 161319, 321403, 641331, 1280704], [59.37, 58.96, 58.73, 58.60, 58.51]),
        ("fp8", [9.67, 9.73, 9.75, 9.80, 9.82], [108436, 215535, 430185, 855980, 1708474], [39.63, 39.39, 39.31, 39.10, 39.02])]:
    dgxc_series("DGXC2411-H100-L31_8B", src, "NeMo 24.09 container (nvcr.io/nvidia/nemo:24.09)", "llama3.1-8b", 8192,
                1, 1, 2, "", 1, 32, [8, 16, 32, 64, 128], [128, 256, 512, 1024, 2048], prec, steps, toks, mfus,
                note="Table header: 'Llama 3.1 8b 24.09 (TP=1, PP=1, CP=2, MBS=1, GA=32)'. Sequence 8192 from the README's tokens/s example.",
                fp8_recipe=FP8_DGXC)

src = f"{DGXC_2411} llama3.1/README_70b.md, 'Expected Performance' tables"
for prec, steps, toks, mfus in [
        ("bf16", [14.72, 14.73, 14.8, 14.89, 14.92, 14.98], [71235, 142373, 283399, 563372, 1124478, 2248957], [54.10, 54.06, 53.81, 53.48, 53.38, 53.38]),
        ("fp8", [11.01, 10.93, 11.16, 11.18, 11.28, 11.39], [95239, 191871, 375834, 750323, 1487342, 2945955], [36.17, 36.43, 35.68, 35.62, 35.30, 34.96])]:
    dgxc_series("DGXC2411-H100-L31_70B", src, "NeMo 24.09 container (nvcr.io/nvidia/nemo:24.09)", "llama3.1-70b", 8192,
                4, 4, 2, 5, 1, 64, [64, 128, 256, 512, 1024, 2048], [128, 256, 512, 1024, 2048, 4096], prec, steps, toks, mfus,
                note="Table header: 'Llama 3.1 70b 24.09 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)'.", fp8_recipe=FP8_DGXC)

src = f"{DGXC_2411} llama3.1/README_405b.md, 'Expected Performance' tables"
L405 = [7, 21, 42, 126, 126, 126]
for prec, steps, toks, mfus in [
        ("bf16", [8.85, 8.75, 16.93, 17.20, 17.52, 17.62], [116632, 117965, 121936, 120022, 235660, 468646], [58.63, 56.17, 57.25, 55.78, 54.76, 54.45]),
        ("fp8", [5.80, 5.71, 11.00, 11.24, 11.31, 12.35], [178118, 180674, 187740, 183664, 365055, 668626], [44.77, 43.01, 44.07, 42.71, 42.45, 38.87])]:
    dgxc_series("DGXC2411-H100-L31_405B", src, "NeMo 24.09 container (nvcr.io/nvidia/nemo:24.09)", "llama3.1-405b", 8192,
                8, None, 2, None, 1, 63, [32, 96, 192, 576, 1152, 2304], [126, 126, 252, 252, 504, 1008], prec, steps, toks, mfus,
                layers=L405, pps=[1, 3, 3, 9, 9, 9], vpps=["", 7, 7, 7, 7, 7],
                note=("Table header: 'Llama 3.1 405b 24.09 (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63)' with per-column rows Layers/GBS/PP/VP; "
                      "the 32/96/192-GPU columns are reduced-depth proxies (layers 7/21/42, full width) - scenario needs llama3.1-405b with layers overridden. "
                      + ("BF16 96-GPU step printed as '8.7  5' (read 8.75; 8192*126/8.75=117965 matches the stated tokens/s)." if prec == "bf16" else "")),
                fp8_recipe=FP8_DGXC)

src = f"{DGXC_2411} nemo_megatron/README_175b.md, 'Expected Performance' tables"
for prec, steps, toks, mfus in [
        ("bf16", [8.91, 8.95, 9.09, 9.01, 9.02], [58843, 117159, 230710, 465517, 930001], [49.93, 49.71, 48.94, 49.38, 49.32]),
        ("fp8", [5.92, 5.96, 6.44, 6.72, 6.24], [88562, 175936, 325645, 624152, 1344328], [37.56, 37.30, 34.52, 33.09, 35.63])]:
    dgxc_series("DGXC2411-H100-GPT3_175B", src, "NeMo Megatron (NeMo-Framework-Launcher) 'NeMo Megatron 24.11' per table header; setup.sh imports nvcr.io/nvidia/nemo:24.05", "gpt3-175b", 2048,
                4, 8, 1, 12, 1, None, [128, 256, 512, 1024, 2048], [256, 512, 1024, 2048, 4096], prec, steps, toks, mfus,
                note="Table header: 'NeMo Megatron 24.11 (TP=4,PP=8, MBS=1, VP=12, SEQ=2048)'. Vocabulary NOT STATED (NeMo GPT-3 uses GPT-2 BPE padded).",
                fp8_recipe=FP8_DGXC)

src = f"{DGXC_2411} nemotron/README_15b.md, 'Expected Performance' tables"
G15 = [16, 32, 64, 128, 256, 512, 1024, 2048]
for prec, steps, toks, mfus in [
        ("bf16", [2.83, 2.86, 2.86, 2.89, 2.88, 2.92, 2.92, 2.96], [92630, 183317, 366635, 725658, 1456356, 2872811, 5745622, 11335957], [62.10, 61.45, 61.45, 60.81, 61.02, 60.18, 60.18, 59.37]),
        ("fp8", [2.08, 2.07, 2.09, 2.08, 2.1, 2.12, 2.12, 2.18], [126031, 253279, 501711, 1008246, 1997288, 3956891, 7913781, 15391941], [42.22, 42.43, 42.02, 42.22, 41.82, 41.43, 41.43, 40.29])]:
    dgxc_series("DGXC2411-H100-NEMOTRON4_15B", src, "'Nemotron4 15b 24.11' per table header; setup.sh imports nvcr.io/nvidia/nemo:24.09", "nemotron4-15b", 4096,
                4, 1, 1, "", 4, 4, G15, [g * 4 for g in G15], prec, steps, toks, mfus,
                note="Table header: 'Nemotron4 15b 24.11 (TP=4, PP=1, MBS=4, GA=4)'. Sequence 4096 from the README's tokens/s example.",
                fp8_recipe=FP8_DGXC)

src = f"{DGXC_2411} nemotron/README_340b.md, 'Expected Performance' tables"
for prec, steps, toks, mfus in [
        ("bf16", [4.61, 4.67, 4.7, 4.73, 4.84], [28432, 56134, 111551, 221686, 433296], [55.38, 54.67, 54.32, 53.98, 52.75]),
        ("fp8", [3.16, 3.21, 3.26, 3.34, 3.49], [41478, 81665, 160825, 313945, 600903], [40.38, 39.75, 39.14, 38.20, 36.56])]:
    dgxc_series("DGXC2411-H100-NEMOTRON4_340B", src, "'Nemotron4 340b 24.11' per table header; setup.sh imports nvcr.io/nvidia/nemo:24.09", "nemotron4-340b", 4096,
                8, 8, 1, 12, 1, 16, [128, 256, 512, 1024, 2048], [32, 64, 128, 256, 512], prec, steps, toks, mfus,
                note="Table header: 'Nemotron4 340b 24.11 (TP=8, PP=8, MBS=1, GA=16, VP=12)'. Sequence 4096 stated in the README notes.",
                fp8_recipe=FP8_DGXC)

# --- 2. DGXC v25.04 (NeMo 25.02.01): layouts that differ from v24.11.1 ---------------------
src = f"{DGXC_2504} llama3.1/README.md, layout tables + 'Expected Performance' tables"
dgxc_series("DGXC2504-H100-L31_70B", src, "NeMo 25.02.01 container (setup.sh FW_VERSION=25.02.01)", "llama3.1-70b", 8192,
            4, 8, 1, 5, 1, 64, [64, 128, 256, 512, 1024, 2048], [128, 256, 512, 1024, 2048, 4096], "fp8",
            [9.86, 9.95, 10, 10.07, 10.08, 10.15], [106346, 210769, 419430, 833030, 1664406, 3305855],
            [40.38, 40.02, 39.82, 39.54, 39.50, 39.23],
            note="Layout table: 70b FP8 TP=4 PP=8 CP=1 VP=5 MBS=1 GA=64, DP stated = gpus/32.", fp8_recipe=FP8_DGXC)
for prec, steps, toks, mfus in [
        ("bf16", [19.78, 19.84, 19.87], [106024, 211406, 422175], [55.47, 55.31, 55.22]),
        ("fp8", [12.37, 12.42, 12.56], [169535, 337706, 667883], [44.35, 44.17, 43.68])]:
    dgxc_series("DGXC2504-H100-L31_405B", src, "NeMo 25.02.01 container (setup.sh FW_VERSION=25.02.01)", "llama3.1-405b", 8192,
                8, 8, 2, 8, 1, 64, [512, 1024, 2048], [256, 512, 1024], prec, steps, toks, mfus,
                note=("Layout table: 405b TP=8 PP=8 CP=2 VP=8 MBS=1 GA=64, 126 layers. 126 layers do not divide into pp*vpp=64 chunks: "
                      "the recipe must count the embedding and the loss as one layer each in the pipeline split (126+2=128) - DERIVED, not stated. "
                      "The 32/64/128-GPU proxy columns (8/30/62 layers) are left out."),
                fp8_recipe=FP8_DGXC)

# --- 3. DGXC v25.05.01 (NeMo 25.04.01): GB200 + H100 405B -----------------------------------
MEAN1144 = "training step time (s), mean of iterations 11-44 (README: parse_train_timing.sh)"
src = f"{DGXC_2505} llama3.1/README.md, 'GB200 Performance' and 'H100 Performance' tables"
for prec, steps, toks, mfus in [
        ("bf16", [9.347, 9.484, 9.508], [56092, 110563, 220567], [47.4, 46.7, 46.6]),
        ("fp8", [6.131, 6.183, 6.244], [85514, 169590, 335867], [36.1, 35.8, 35.5])]:
    dgxc_series("DGXC2505-GB200-L31_405B", src, "NeMo 25.04.01 container (metadata.yaml)", "llama3.1-405b", 8192,
                4, 8, 2, 8, 1, 32, [128, 256, 512], [64, 128, 256], prec, steps, toks, mfus,
                note=("Layout table (GB200): TP=4 PP=8 CP=2 VP=8 MBS=1 DP=gpus/64 GA=32, 126 layers (pipeline split must count embedding+loss: DERIVED). "
                      "Step time = mean of iterations 11-44 (parse_train_timing.sh). MFU against GB200 peak 2450 (BF16) / 4900 (FP8) TFLOP/s as stated."),
                fp8_recipe=FP8_DGXC.replace("NeMo 24.x", "NeMo"), metric=MEAN1144)
for prec, step, tok, mfu in [("bf16", 19.810, 105863, 55.34), ("fp8", 13.020, 161072, 42.12)]:
    dgxc_series("DGXC2505-H100-L31_405B", src, "NeMo 25.04.01 container (metadata.yaml)", "llama3.1-405b", 8192,
                8, 8, 2, 8, 1, 32, [512], [256], prec, [step], [tok], [mfu],
                note="Layout table (H100): TP=8 PP=8 CP=2 VP=8 DP=4 MBS=1 GBS=256 GA=32 (as printed).",
                fp8_recipe=FP8_DGXC.replace("NeMo 24.x", "NeMo"), metric=MEAN1144)

# --- 4. NeMo 24.07 performance summary (H100, FP8) -------------------------------------------
nemo2407 = [  # model, gpus, gbs, mbs, seq, tp, pp, cp, vp, tok/s/gpu, tflops
    ("gpt3-5b", 64, 2048, 4, 2048, 1, 1, 1, 1, 23406, 765),
    ("gpt3-20b", 64, 256, 2, 2048, 2, 1, 1, 1, 5851, 750),
    ("gpt3-175b", 128, 256, 1, 2048, 4, 8, 1, 6, 716, 771),
    ("gpt3-175b", 512, 2048, 2, 2048, 4, 8, 1, 6, 825, 888),
    ("llama2-7b", 8, 128, 1, 4096, 1, 1, 1, 1, 16934, 780),
    ("llama2-13b", 16, 128, 1, 4096, 1, 4, 1, 10, 8715, 760),
    ("llama2-70b", 64, 128, 1, 4096, 4, 4, 1, 20, 1728, 768),
    ("nemotron3-8b", 64, 256, 4, 4096, 2, 1, 1, 1, 12507, 643),
    ("nemotron3-22b", 64, 256, 2, 4096, 2, 4, 1, 10, 4312, 562),
    ("nemotron4-340b", 128, 32, 1, 4096, 8, 8, 1, 12, 326, 686),
    ("llama3-8b", 8, 128, 1, 8192, 1, 1, 2, 1, 12273, 711),
    ("llama3-70b", 64, 128, 1, 8192, 4, 4, 2, 5, 1524, 734),
]
for m, g, gbs, mbs, seq, tp, pp, cp, vp, tok, tf in nemo2407:
    dp, ga, der = layout(g, tp, pp, cp, mbs, gbs)
    note = "Table columns: Model, #-GPUs, GBS, MBS, Sequence Length, TP, PP, CP, VP, Tokens/sec/GPU, Model TFLOP/sec/GPU. VP=1 in the table means no interleaving."
    if m == "gpt3-175b" and g == 512:
        note += " The TFLOP/s cell links to mlcommons.org/benchmarks/training (MLPerf-style run)."
    if m.startswith("nemotron"):
        note += " Nemotron-8B/22B/340B as named in the table; shapes from NeMo's Nemotron3/Nemotron4 configs (the 24.07 runs used NeMo 1.0 launcher configs: shape NOT STATED in the table)."
    add(id=f"NEMO2407-H100-{m.upper().replace('.', '_').replace('-', '_')}-{g:04d}", source=NEMO_2407,
        framework="NeMo 24.07 container", gpu_type="H100", hardware=GPU["H100"], gpus=g, model=m, seq=seq,
        tp=tp, pp=pp, cp=cp, vpp="" if vp == 1 else vp, ep=1, dp=dp, fsdp=0, mbs=mbs, gbs=gbs, ga=ga,
        precision="fp8", fp8_recipe="FP8 (Transformer Engine; scaling recipe NOT STATED, delayed scaling was the 24.07 default)",
        metric="tokens/s/GPU", value=tok, tokens_per_s_per_gpu=tok, model_tflops_per_gpu=tf,
        series=f"NEMO2407-H100-{m}", derived="; ".join(der), not_stated="fsdp (not used in 24.07); recompute; ep",
        notes=note)

# --- 5. NeMo long-sequence tables (context parallel) -----------------------------------------
ls_h100 = [  # seqK, gpus, gbs, tp, pp, dp, cp, tflops
    (4, 4, 1024, 1, 1, 4, 1, 768), (8, 8, 512, 1, 2, 4, 1, 730), (16, 16, 256, 2, 1, 8, 1, 660),
    (32, 32, 128, 2, 1, 8, 2, 610), (64, 64, 64, 4, 1, 8, 2, 574), (128, 128, 32, 4, 1, 8, 4, 555),
    (256, 256, 16, 4, 1, 8, 8, 549), (512, 512, 8, 8, 1, 4, 16, 549), (1024, 1024, 4, 8, 1, 4, 32, 536)]
for k, g, gbs, tp, pp, dp, cp, tf in ls_h100:
    add(id=f"NEMOLS-H100-LLAMA2_7B-{k:04d}K", source=NEMO_LS_H100, framework="NeMo 24.03.01.framework container",
        gpu_type="H100", hardware=GPU["H100"], gpus=g, model="llama2-7b", seq=k * 1024, tp=tp, pp=pp, cp=cp,
        vpp="", ep=1, dp=dp, fsdp=0, mbs="", gbs=gbs, ga="", precision="fp8",
        fp8_recipe="FP8 (recipe NOT STATED)", metric="model TFLOP/s/GPU", value=tf, model_tflops_per_gpu=tf,
        series="NEMOLS-H100-LLAMA2_7B", derived="seq = SeqLen(K)*1024 (table gives K)",
        not_stated="mbs, ga, vpp, recompute, fsdp",
        notes="'Batch Size' column read as global batch size (tokens per step = seq*gbs = 4M for every row). Table also gives the no-CP TFLOP/s without its layout (not used).")
ls_b200 = [  # seqK, gpus, gbs, tp, cp, dp, tflops
    (8, 2, 512, 1, 1, 2, 1671), (16, 4, 256, 1, 1, 4, 1717), (32, 8, 128, 1, 2, 4, 1624),
    (64, 16, 64, 1, 4, 4, 1600), (128, 32, 32, 2, 4, 4, 1588), (256, 64, 16, 4, 4, 4, 1590),
    (512, 128, 8, 4, 8, 4, 1619), (1024, 256, 4, 4, 16, 4, 1608)]
for k, g, gbs, tp, cp, dp, tf in ls_b200:
    add(id=f"NEMOLS-B200-LLAMA3_8B-{k:04d}K", source=NEMO_LS_B200, framework="NeMo 25.04.rc2 container",
        gpu_type="B200", hardware=GPU["B200"], gpus=g, model="llama3-8b", seq=k * 1024, tp=tp, pp=1, cp=cp,
        vpp="", ep=1, dp=dp, fsdp=0, mbs="", gbs=gbs, ga="", precision="fp8",
        fp8_recipe="FP8 (recipe NOT STATED)", metric="model TFLOP/s/GPU", value=tf, model_tflops_per_gpu=tf,
        series="NEMOLS-B200-LLAMA3_8B", derived="seq = SeqLen(K)*1024; pp=1 from the later edit of the same table (19fadb67), absent in 14d427f",
        not_stated="mbs, ga, vpp, recompute, fsdp",
        notes=("GPU count = tp*cp*dp in this commit; the later edit (a2c4cc8e/19fadb67) prints '# of GPUs' 8..1024 (4x) with the same TP/CP/DP and TFLOP/s - "
               "treated as a copy error from the H100 table. 'Batch Size' read as global batch size (4M tokens per step)."))

# --- 6. Megatron-Bridge performance summaries (25.11, 26.02, 26.04.01) -----------------------
def mb(id_, rel, section, gpu, g, model, prec, recipe, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ga, tok, tf, note=""):
    dp = g // (tp * pp * cp)
    der = ["dp=gpus/(tp*pp*cp)"]
    if ga == "":
        ga = gbs // (dp * mbs)
        der.append("ga=gbs/(dp*mbs)")
    add(id=id_, source=f"{MB}, section '{rel} NeMo Container' / {section}", framework=f"NeMo {rel} container (Megatron-Bridge)",
        gpu_type=gpu, hardware=GPU[gpu], gpus=g, model=model, seq=seq, tp=tp, pp=pp, cp=cp, vpp=vp, ep=1, dp=dp,
        fsdp=fsdp, mbs=mbs, gbs=gbs, ga=ga, precision=prec, fp8_recipe=recipe, metric="tokens/s/GPU", value=tok,
        tokens_per_s_per_gpu=tok, model_tflops_per_gpu=tf, series=f"MB-{gpu}-{model}-{prec}-{recipe.split(' ')[0]}",
        derived="; ".join(der), not_stated="recompute; cuda graphs; tp comm overlap (see scripts/performance recipes)",
        notes=(note + " FSDP column: >0 = Megatron-FSDP sharding group size, 0 = DDP with distributed optimizer.").strip())

CS = "FP8-CS (per-tensor current scaling)"
MX = "MXFP8 (block scaling, 1x32)"
F8 = "FP8 (table label; current scaling per the 25.11 table and the recipes - DERIVED)"
r = "25.11"; s = "Pre-Training Performance / System: {}"
mb("MB2511-GB300-L3_8B-CS", r, s.format("DGX-GB300"), "GB300", 8, "llama3-8b", "fp8", CS, 128, 2, 8192, 0, 1, 1, 1, "", 8, 37556, 1933, "Cell 'FP8-CS (FP8-MX)': value outside parentheses.")
mb("MB2511-GB300-L3_8B-MX", r, s.format("DGX-GB300"), "GB300", 8, "llama3-8b", "fp8", MX, 128, 2, 8192, 0, 1, 1, 1, "", 8, 36108, 1858, "Cell 'FP8-CS (FP8-MX)': value in parentheses.")
mb("MB2511-GB300-L3_70B-CS", r, s.format("DGX-GB300"), "GB300", 64, "llama3-70b", "fp8", CS, 256, 2, 8192, 64, 1, 1, 1, "", 2, 4520, 2030, "VP printed as 1 (no interleaving).")
mb("MB2511-GB300-L31_405B-CS", r, s.format("DGX-GB300"), "GB300", 256, "llama3.1-405b", "fp8", CS, 1536, 1, 8192, 0, 2, 8, 2, 4, 192, 999, 2522)
mb("MB2511-GB200-L3_8B-CS", r, s.format("DGX-GB200"), "GB200", 8, "llama3-8b", "fp8", CS, 128, 2, 8192, 0, 1, 1, 1, "", 8, 31508, 1622, "Cell 'FP8-CS (FP8-MX)': value outside parentheses.")
mb("MB2511-GB200-L3_8B-MX", r, s.format("DGX-GB200"), "GB200", 8, "llama3-8b", "fp8", MX, 128, 2, 8192, 0, 1, 1, 1, "", 8, 29789, 1533, "Cell 'FP8-CS (FP8-MX)': value in parentheses.")
mb("MB2511-GB200-L3_70B-CS", r, s.format("DGX-GB200"), "GB200", 64, "llama3-70b", "fp8", CS, 256, 2, 8192, 64, 1, 1, 1, "", 2, 4312, 1937, "VP printed as 1 (no interleaving).")
mb("MB2511-GB200-L31_405B-CS", r, s.format("DGX-GB200"), "GB200", 256, "llama3.1-405b", "fp8", CS, 1536, 1, 8192, 0, 4, 16, 1, 4, 384, 813, 2053)
mb("MB2511-B200-L3_8B-CS", r, s.format("DGX-B200"), "B200", 8, "llama3-8b", "fp8", CS, 128, 2, 8192, 0, 1, 1, 1, "", 8, 30624, 1576, "Cell 'FP8-CS (FP8-MX)': value outside parentheses.")
mb("MB2511-B200-L3_8B-MX", r, s.format("DGX-B200"), "B200", 8, "llama3-8b", "fp8", MX, 128, 2, 8192, 0, 1, 1, 1, "", 8, 29521, 1519, "Cell 'FP8-CS (FP8-MX)': value in parentheses.")
mb("MB2511-B200-L31_405B-CS", r, s.format("DGX-B200"), "B200", 128, "llama3.1-405b", "fp8", CS, 64, 1, 8192, 0, 4, 8, 2, 8, 32, 661, 1667, "Cell 'FP8-CS (FP8-MX)': value outside parentheses.")
mb("MB2511-B200-L31_405B-MX", r, s.format("DGX-B200"), "B200", 128, "llama3.1-405b", "fp8", MX, 64, 1, 8192, 0, 4, 8, 2, 8, 32, 624, 1576, "Cell 'FP8-CS (FP8-MX)': value in parentheses.")
mb("MB2511-H100-L3_8B-CS", r, s.format("DGX-H100"), "H100", 8, "llama3-8b", "fp8", CS, 128, 1, 8192, 8, 1, 1, 1, "", 16, 14451, 744)
mb("MB2511-H100-L3_70B-CS", r, s.format("DGX-H100"), "H100", 64, "llama3-70b", "fp8", CS, 128, 1, 8192, 0, 4, 8, 1, 5, 64, 1602, 719)
mb("MB2511-H100-L31_405B-CS", r, s.format("DGX-H100"), "H100", 1024, "llama3.1-405b", "fp8", CS, 512, 1, 8192, 0, 8, 8, 2, 8, 64, 292, 737)

for r, rows70, rows405 in [
    ("26.02",
     [("GB300", MX, 1, 0, 1, 4, 5, 4596, 2064), ("GB200", MX, 1, 0, 2, 4, 5, 3613, 1623),
      ("GB300", F8, 2, 64, 1, 1, "", 5003, 2248), ("GB200", F8, 2, 64, 1, 1, "", 4040, 1815),
      ("H100", F8, 1, 0, 4, 8, 5, 1621, 728)],
     [("GB300", MX, 256, 2, 8, 2, 4, 931, 2349), ("GB200", MX, 256, 4, 16, 1, 8, 786, 1983),
      ("GB300", F8, 256, 4, 8, 1, 4, 988, 2495), ("GB200", F8, 256, 4, 16, 1, 4, 793, 2004),
      ("H100", F8, 1024, 8, 8, 2, 8, 311, 784)]),
    ("26.04.01",
     [("GB300", F8, 2, 64, 1, 1, "", 5248, 2348), ("GB300", MX, 1, 0, 1, 4, 5, 4864, 2186),
      ("GB200", F8, 2, 64, 1, 1, "", 4224, 1892), ("GB200", MX, 1, 0, 2, 4, 5, 3712, 1664),
      ("H100", F8, 1, 0, 4, 8, 5, 1664, 731)],
     [("GB300", F8, 256, 4, 8, 1, 4, 1024, 2617), ("GB300", MX, 256, 2, 8, 2, 4, 960, 2453),
      ("GB200", F8, 256, 4, 16, 1, 4, 864, 2144), ("GB200", MX, 256, 4, 16, 1, 8, 800, 1994),
      ("H100", F8, 1024, 8, 8, 2, 8, 328, 827)])]:
    tag = "MB" + r.replace(".", "")
    for gpu, rec, mbs_, fsdp, tp, pp, vp, tok, tf in rows70:
        k = "MX" if rec is MX else "F8"
        mb(f"{tag}-{gpu}-L3_70B-{k}", r, "Pre-Training Performance / Model: LLAMA3_70B", gpu, 64, "llama3-70b", "fp8", rec,
           256, mbs_, 8192, fsdp, tp, pp, 1, vp, "", tok, tf, "VP 'n/a' = no interleaving.")
    for gpu, rec, g, tp, pp, cp, vp, tok, tf in rows405:
        k = "MX" if rec is MX else "F8"
        mb(f"{tag}-{gpu}-L31_405B-{k}", r, "Pre-Training Performance / Model: LLAMA3.1_405B", gpu, g, "llama3.1-405b", "fp8", rec,
           1536, 1, 8192, 0, tp, pp, cp, vp, "", tok, tf)

# --- 7. Llama 3 paper, Table 4 (BF16, H100, Meta's 4D-parallel stack) ------------------------
for i, (g, tp, cp, pp, dp, seq, bsz_dp, tf, mfu) in enumerate([
        (8192, 8, 1, 16, 64, 8192, 32, 430, 43), (16384, 8, 1, 16, 128, 8192, 16, 400, 41),
        (16384, 8, 16, 16, 8, 131072, 16, 380, 38)], 1):
    add(id=f"LLAMA3-T4-{i:02d}", source=LLAMA3, framework="Meta internal 4D-parallel training stack (not Megatron; same TP/CP/PP/DP-FSDP decomposition)",
        gpu_type="H100", hardware=GPU["H100-META"], gpus=g, model="llama3.1-405b", seq=seq, tp=tp, pp=pp, cp=cp, vpp="",
        ep=1, dp=dp, fsdp="",
        mbs="", gbs=dp * bsz_dp, ga="", precision="bf16", metric="TFLOP/s/GPU (paper's BF16 MFU basis)", value=tf,
        model_tflops_per_gpu=tf, mfu_pct=mfu, series=f"LLAMA3-T4-seq{seq}",
        derived="gbs = DP * 'Batch size/DP' (sequences); 16M tokens/batch stated" + ("; dp=gpus/(tp*cp*pp): the arXiv PDF prints DP=4 for this row, which gives 8,192 GPUs and 8M tokens/batch; 8 matches the stated 16,384 GPUs and 16M tokens (some renderings print 8)" if cp > 1 else ""),
        not_stated="mbs; number of virtual stages (paper: interleaved schedule with tunable stages, 405B's 126 layers with first/last stage one layer fewer); step time",
        notes="Table 4 columns: GPUs, TP, CP, PP, DP, Seq. Len., Batch size/DP, Tokens/Batch (16M), TFLOPs/GPU, BF16 MFU. Row 3 is the 128K long-context stage. The DP dimension is FSDP-style (paper 3.3.2: model, optimizer and gradients sharded; parameters not resharded after forward); pipeline uses an interleaved schedule with first and last stage one layer fewer.")

# --- write ------------------------------------------------------------------
ids = [r["id"] for r in rows]
assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
for r in rows:
    assert r["precision"] in ("bf16", "fp8"), r["id"]
    if r["dp"] != "" and r["gpus"] != "":
        assert int(r["tp"]) * int(r["pp"]) * int(r["cp"]) * int(r["dp"]) == int(r["gpus"]), r["id"]
with open(os.path.join(HERE, "rows.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=COLS)
    w.writeheader()
    w.writerows(rows)
print(len(rows), "rows")
