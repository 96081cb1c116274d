#!/usr/bin/env python3
"""Fused (flash) attention timings through PyTorch SDPA, in the probe's format.

The probe measures the materialised path itself (cuBLASLt + its softmax); the
fused path is measured here, through torch.nn.functional.scaled_dot_product_attention
with one backend forced at a time (FLASH_ATTENTION = FlashAttention-2 kernels in
PyTorch, CUDNN_ATTENTION = cuDNN fused SDPA; MATH = materialised reference), causal,
bf16, head_dim 128, GQA via enable_gqa. Output: [[attention]] tables appended to the
probe TOML (TOML allows an array of tables to continue anywhere in a file).
Usage: attention_sdpa.py OUT_FRAGMENT.toml [--quick] [--sustained MS] [--back-to-back N [--backend flash|cudnn | --dropout P]]
--sustained MS: MS milliseconds of an 8192^3 bf16 matmul before each timed call (and 3 s first), so
the kernels are timed at the power-capped clock of a training step (probe --sustained, run 15).
--back-to-back N: N calls back to back between the two timing events (the median over repeats divided
by N), so the host issues ahead of the GPU as in a training step and a short call's host dispatch is
not counted as its device time (run 21b: a 1k-token causal forward takes 34 us back to back, while
one call per event pair fitted a 73 us per-call overhead). Measures the cuDNN backend only, causal
square calls and, as context parallelism's ring runs them, non-causal calls of s x s/2 and s/2 x s
(queries x keys), up to 128k tokens; samples carry seq_kv and timing = "back_to_back", which
`mfusim calibrate` fits with the tile form (docs/cost-model.md, "Attention").
--backend flash (with --back-to-back): the same set through the FLASH_ATTENTION backend (FlashAttention-2,
SDPA's default on Hopper before torch 2.10), impl = "flash"; where it rejects enable_gqa, K and V are
repeated to the query heads first (as torchtitan's model code does before SDPA).
--dropout P (with --back-to-back): dropout on the probabilities inside the fused call, for both backends:
pairs of one causal call (head dim 128, MHA; run 48's GPT-3 shapes and an 8k point) timed with dropout_p = P
and without, written as [[attention_dropout]] tables (`seconds`, `seconds_no_dropout`), which `mfusim
calibrate` fits into a time per score per kernel and pass (docs/cost-model.md, "Attention"; run 48).
"""
import statistics, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

HEAT_MS = float(sys.argv[sys.argv.index("--sustained") + 1]) if "--sustained" in sys.argv else 0.0
_heat = {}

def heat(ms):
    """About `ms` milliseconds of a large bf16 matmul on the current stream (asynchronous)."""
    if ms <= 0:
        return
    if not _heat:
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        _heat["x"] = x
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        x @ x; a.record()
        for _ in range(4): x @ x
        b.record(); b.synchronize()
        _heat["call_ms"] = max(a.elapsed_time(b) / 4, 1e-3)
    x = _heat["x"]
    for _ in range(max(1, round(ms / _heat["call_ms"]))):
        x @ x

LOOP = int(sys.argv[sys.argv.index("--back-to-back") + 1]) if "--back-to-back" in sys.argv else 1
BACKEND = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cudnn"
if BACKEND not in ("flash", "cudnn"):
    sys.exit("--backend: flash or cudnn")


def timed(fn, repeats=7):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for _ in range(repeats):
        heat(HEAT_MS)
        a.record()
        for _ in range(LOOP):
            fn()
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) * 1e-3 / LOOP)
    return statistics.median(v), min(v)


def back_to_back(out):
    """The --back-to-back sample set (cuDNN fused attention, or FlashAttention-2 with --backend flash)."""
    be = SDPBackend.FLASH_ATTENTION if BACKEND == "flash" else SDPBackend.CUDNN_ATTENTION
    impl = "flash" if BACKEND == "flash" else "cudnn_fused"
    heat(3000.0 if HEAT_MS > 0 else 0.0)
    lines = ["", f"# ---- fused attention, back to back ({LOOP} calls per timing), validation/attention_sdpa.py ----",
             f"[sdpa_back_to_back_provenance]\ntorch = \"{torch.__version__}\"\ngpu = \"{torch.cuda.get_device_name(0)}\"\n"
             f"cudnn = {torch.backends.cudnn.version()}\ntiming = \"back_to_back\"\ncalls_per_timing = {LOOP}"]
    heads = [(1, 32, 8), (1, 16, 2), (1, 8, 8), (1, 64, 8), (2, 16, 16), (4, 8, 1)]
    shapes = []
    for (b, H, Hk) in heads:
        for s in (512, 1024, 2048, 4096, 8192, 16384, 32768):
            if b * H * s * s > 2 ** 37:   # keep each call under ~0.1 s
                continue
            shapes += [(b, H, Hk, s, s, True), (b, H, Hk, s, s // 2, False), (b, H, Hk, s // 2, s, False)]
    shapes += [(1, 8, 8, 65536, 65536, True), (1, 4, 2, 131072, 131072, True), (1, 8, 8, 65536, 32768, False)]
    for (b, H, Hk, sq, skv, causal) in shapes:
        q = torch.randn(b, H, sq, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, Hk, skv, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, Hk, skv, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        do = torch.randn(b, H, sq, 128, device="cuda", dtype=torch.bfloat16)
        note = ""
        tf = tfb = None
        kk, vv = k, v
        for gqa in ((True, False) if Hk != H else (False,)):
            if not gqa and Hk != H:
                kk = k.detach().repeat_interleave(H // Hk, 1).requires_grad_()
                vv = v.detach().repeat_interleave(H // Hk, 1).requires_grad_()
            try:
                with sdpa_kernel([be]):
                    def fwd():
                        return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal, enable_gqa=gqa)
                    def fb():
                        fwd().backward(do)
                    tf, _ = timed(fwd)
                    tfb, _ = timed(fb)
                note = "" if gqa or Hk == H else " (K/V repeated: backend rejected enable_gqa)"
                break
            except Exception as e:
                print(f"{BACKEND} b={b} H={H} Hkv={Hk} {sq}x{skv} gqa={gqa}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                tf = tfb = None
                torch.cuda.empty_cache()
        if tf is None:
            continue
        flops_f = 4.0 * b * H * sq * skv * 128 * (0.5 if causal else 1.0)
        for pss, t, fl in (("fwd", tf, flops_f), ("bwd", tfb - tf, 2.5 * flops_f)):
            lines.append(f"\n[[attention]]\nimpl = \"{impl}\"\nsource = \"torch SDPA backend {be.name}, back to back{note}\"\n"
                         f"pass = \"{pss}\"\ntiming = \"back_to_back\"\nbatch = {b}\nheads = {H}\nkv_heads = {Hk}\nseq = {sq}\n"
                         f"seq_kv = {skv}\nhead_dim = 128\ncausal = {'true' if causal else 'false'}\nseconds = {t:.6g}\nflops = {fl:.6g}\n"
                         f"flops_convention = \"causal-halved; bwd = 2.5 x fwd (FA2 count incl. recompute)\"")
            print(f"{BACKEND} {pss} b={b} H={H:2d} Hkv={Hk:2d} {sq:6d}x{skv:6d} causal={int(causal)} {t*1e3:8.3f} ms  {fl/t*1e-12:6.1f} TFLOP/s", flush=True)
        del q, k, v, do, kk, vv
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")

DROPOUT = float(sys.argv[sys.argv.index("--dropout") + 1]) if "--dropout" in sys.argv else 0.0
if not 0.0 <= DROPOUT < 1.0:
    sys.exit("--dropout: a probability, at least 0 and below 1")


def dropout_pairs(out):
    """The --dropout set: each (backend, shape, pass) timed back to back with dropout DROPOUT and without."""
    lines = ["", f"# ---- attention dropout inside the fused call, back to back ({LOOP} calls per timing), "
             "validation/attention_sdpa.py --dropout ----"]
    shapes = [(4, 32, 2048), (2, 24, 2048), (1, 24, 2048), (1, 32, 8192)]   # (b, heads, seq): run 48's shapes
    for impl, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn_fused", SDPBackend.CUDNN_ATTENTION)):
        for (b, H, s) in shapes:
            q, k, v = (torch.randn(b, H, s, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
            do = torch.randn(b, H, s, 128, device="cuda", dtype=torch.bfloat16)
            t = {}
            try:
                with sdpa_kernel([be]):
                    for p in (0.0, DROPOUT):
                        def fwd(p=p):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
                        def fb(p=p):
                            fwd(p).backward(do)
                        tf, _ = timed(fwd)
                        tfb, _ = timed(fb)
                        t[p] = {"fwd": tf, "bwd": tfb - tf}
            except Exception as e:
                print(f"{impl} b={b} H={H} s={s} dropout: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                continue
            finally:
                del q, k, v, do
                torch.cuda.empty_cache()
            for pss in ("fwd", "bwd"):
                lines.append(f"\n[[attention_dropout]]\nimpl = \"{impl}\"\nsource = \"torch SDPA backend {be.name}, back to back\"\n"
                             f"pass = \"{pss}\"\ntiming = \"back_to_back\"\nbatch = {b}\nheads = {H}\nseq = {s}\nhead_dim = 128\n"
                             f"causal = true\ndropout = {DROPOUT}\nseconds = {t[DROPOUT][pss]:.6g}\n"
                             f"seconds_no_dropout = {t[0.0][pss]:.6g}")
                print(f"{impl} {pss} b={b} H={H:2d} {s:6d} dropout {DROPOUT}: {t[DROPOUT][pss]*1e3:8.3f} ms, "
                      f"without {t[0.0][pss]*1e3:8.3f} ms", flush=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    out = sys.argv[1]
    if DROPOUT > 0:
        if LOOP < 2:
            sys.exit("--dropout needs --back-to-back N (N >= 2): the pairs are timed as a training step issues them")
        dropout_pairs(out)
        return
    if LOOP > 1:
        back_to_back(out)
        return
    quick = "--quick" in sys.argv
    heat(3000.0 if HEAT_MS > 0 else 0.0)
    cfgs = [(1, 32, 8, s, 128) for s in ((1024, 4096) if quick else (1024, 2048, 4096, 8192, 16384))]
    if not quick:
        cfgs += [(1, 16, 16, 4096, 128), (2, 8, 1, 8192, 128), (4, 32, 8, 2048, 128)]
    # the attention shapes of the flash rows of runs/run01-full/h200_steps.csv (train_step.py): (mbs, heads, kv, seq)
    train = [] if "--no-train-shapes" in sys.argv else [
        (1, 12, 4, 2048), (1, 12, 4, 4096), (1, 12, 4, 16384),
        (1, 16, 8, 2048), (2, 16, 8, 2048), (4, 16, 8, 2048), (8, 16, 8, 2048), (1, 16, 8, 4096), (1, 16, 8, 8192),
        (1, 16, 8, 16384), (1, 24, 8, 4096), (2, 24, 8, 4096), (1, 24, 8, 8192),
        (1, 32, 8, 2048), (1, 32, 8, 4096), (2, 32, 8, 4096), (4, 32, 8, 4096), (1, 32, 8, 8192), (1, 32, 8, 16384)]
    train = [(b, H, Hk, s, 128) for (b, H, Hk, s) in train if (b, H, Hk, s, 128) not in cfgs]
    cfgs += train
    lines = ["", "# ---- fused attention, measured by validation/attention_sdpa.py (PyTorch SDPA) ----",
             f"[sdpa_provenance]\ntorch = \"{torch.__version__}\"\ngpu = \"{torch.cuda.get_device_name(0)}\"\n"
             f"cudnn = {torch.backends.cudnn.version()}"]
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)]
    for (b, H, Hk, s, d) in cfgs:
        q = torch.randn(b, H, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, Hk, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, Hk, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        do = torch.randn(b, H, s, d, device="cuda", dtype=torch.bfloat16)
        for name, be in backends:
            if name == "math" and (b * H * s * s * 2 * 4 > 60e9 or (b, H, Hk, s, d) in train):
                continue
            kk, vv, gqa, note = k, v, Hk != H, ""
            if name == "flash" and gqa:
                try:
                    with sdpa_kernel([be]):
                        F.scaled_dot_product_attention(q[:, :, :256], k[:, :, :256], v[:, :, :256], is_causal=True, enable_gqa=True)
                except Exception:
                    kk = k.detach().repeat_interleave(H // Hk, dim=1).requires_grad_()
                    vv = v.detach().repeat_interleave(H // Hk, dim=1).requires_grad_()
                    gqa, note = False, " (K/V repeated: backend rejected enable_gqa)"
            try:
                with sdpa_kernel([be]):
                    def fwd():
                        return F.scaled_dot_product_attention(q, kk, vv, is_causal=True, enable_gqa=gqa)
                    def fb():
                        o = fwd(); o.backward(do)
                    tf, tfmin = timed(lambda: fwd())
                    tfb, _ = timed(fb)
            except Exception as e:
                print(f"sdpa {name} b={b} H={H} Hkv={Hk} s={s}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                lines.append(f"\n[[skipped]]\nfamily = \"attention_{name}\"\nbatch = {b}\nheads = {H}\nkv_heads = {Hk}\nseq = {s}\n"
                             f"head_dim = {d}\nwhy = \"{str(e).splitlines()[0][:150].replace(chr(34), chr(39))}\"")
                torch.cuda.empty_cache()
                continue
            flops_f = 4.0 * b * H * s * s * d / 2  # causal: half of QK^T and PV
            for pss, t, fl in (("fwd", tf, flops_f), ("bwd", tfb - tf, 2.5 * flops_f)):
                impl = "flash" if name == "flash" else ("cudnn_fused" if name == "cudnn" else "materialized_torch_math")
                tag = "\nset = \"train_shapes\"" if (b, H, Hk, s, d) in train else ""
                lines.append(f"\n[[attention]]{tag}\nimpl = \"{impl}\"\nsource = \"torch SDPA backend {be.name}{note}\"\npass = \"{pss}\"\n"
                             f"batch = {b}\nheads = {H}\nkv_heads = {Hk}\nseq = {s}\nhead_dim = {d}\ncausal = true\n"
                             f"seconds = {t:.6g}\nflops = {fl:.6g}\nflops_convention = \"causal-halved; bwd = 2.5 x fwd (FA2 count incl. recompute)\"")
                print(f"sdpa {name:6s} {pss} b={b} H={H} Hkv={Hk} s={s:6d} {t*1e3:8.3f} ms  {fl/t*1e-12:6.1f} TFLOP/s")
            torch.cuda.empty_cache()
        del q, k, v, do
    # which kernels the FLASH_ATTENTION backend launches (the backend train_step.py forces for flash = 1)
    try:
        from torch.profiler import profile, ProfilerActivity
        q = torch.randn(1, 16, 2048, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, 8, 2048, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for name, be in backends[:2]:
            with sdpa_kernel([be]):
                F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True).sum().backward()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True).sum().backward()
                    torch.cuda.synchronize()
            names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA" and
                            ("flash" in e.name.lower() or "cudnn" in e.name.lower() or "fmha" in e.name.lower()
                             or "attn" in e.name.lower() or "sdpa" in e.name.lower())})
            lines.append(f"\n[[sdpa_kernels]]\nbackend = \"{be.name}\"\nkernels = {[n[:160] for n in names]!r}".replace("'", '"'))
            print(f"sdpa kernels {be.name}: {names}")
    except Exception as e:
        print("sdpa kernel listing failed:", str(e).splitlines()[0][:200], file=sys.stderr)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
