#!/usr/bin/env python3
"""Achieved bandwidth of the eager PyTorch kernel families a training step of
train_step.py launches, at the runs' own tensor sizes (one H200).

Each sample is one op on fresh random data (never zeros), timed with CUDA events
around each call, median of `reps` calls, the L2 flushed before each call (a
256 MiB write), so a sample is HBM-bound like a kernel inside a step whose inputs
were written long before. Bytes are counted the way mfusim's models/layer_kernels.cpp
(and its builders) count the kernel (docs/fidelity.md): a sample's bandwidth is those bytes over
its time, so the fitted family bandwidth is consistent with the model's byte counts.

Families (kind = "torch:<family>" in the output; fitted by `mfusim calibrate`):
  cast_down   x.to(bf16), fp32 -> bf16 (vectorized bfloat16_copy_kernel): 4 + 2 B/elt
  cast_up     x.float(), bf16 -> fp32 (direct_copy_kernel): 2 + 4 B/elt
  add_mixed   x32 + y16 -> fp32 (the fp32 residual add of a bf16 branch): 4 + 2 + 4 B/elt
  add_f32     x32 + y32 -> fp32 (residual gradient accumulation): 12 B/elt
  eltwise     bf16 elementwise: scale, silu, mul
  masked_fill scores.masked_fill(mask, -inf) out of place: copy + fill, 8 B/score
  repeat      k.repeat_interleave(rep, dim=1) (GQA): 2 B read + 2 x rep B written per K element
  softmax_fwd / softmax_bwd  fp32 softmax over rows of s (fits on chip: one read): 8 / 12 B/elt
  log_softmax fp32 log_softmax over vocabulary rows (three reads): fwd 16 B/elt, bwd 16 B/elt
  norm_fwd / norm_bwd  F.rms_norm over fp32 [T, h]: 8 B/elt; backward (autograd, input and weight
              gradients) 12 B/elt, timed as (fwd + bwd) - fwd
  fill        zeros of fp32 (nll_loss backward's gradient): 4 B/elt
  adamw       torch.optim.AdamW(fused=True) step over the runs' parameter lists: 28 B/param
  copy        y.copy_(x), bf16 same dtype: the reference (the probe's copy kernel)
Usage: kernel_bw.py OUT.toml [--quick]
"""
import datetime, math, statistics, subprocess, sys, time
import torch
import torch.nn.functional as F

DEV = "cuda"
RUN_TH = [(4096, 1536), (4096, 2048), (8192, 2048), (4096, 3072), (4096, 4096), (16384, 4096)]  # T, h of the runs
SCORES = [(1, 16, 2048), (1, 16, 4096), (1, 12, 4096), (1, 32, 2048)]  # b, heads, s (materialised rows)
VOCAB = [(4096, 32000), (4096, 128256), (2048, 128256)]


def timed(fn, reps, flush):
    ts = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


def main():
    out = sys.argv[1]
    quick = "--quick" in sys.argv
    reps = 5 if quick else 15
    flush = torch.empty(256 * 2**20 // 4, device=DEV, dtype=torch.float32)
    rows = []

    def sample(family, op, shape, nbytes, fn):
        fn(); torch.cuda.synchronize()            # warm-up (and any lazy init)
        t = timed(fn, reps, flush)
        rows.append(dict(family=family, op=op, shape=shape, bytes=nbytes, seconds=t))
        print(f"{family:12s} {op:28s} {shape:22s} {nbytes/2**20:9.1f} MiB {t*1e6:9.1f} us {nbytes/t*1e-9:7.0f} GB/s",
              flush=True)

    r16 = lambda *s: (torch.rand(*s, device=DEV) * 2 - 1).to(torch.bfloat16)
    r32 = lambda *s: torch.rand(*s, device=DEV) * 2 - 1
    for T, h in (RUN_TH[:3] if quick else RUN_TH):
        n, sh = T * h, f"{T}x{h}"
        x32, y32, x16 = r32(T, h), r32(T, h), r16(T, h)
        sample("cast_down", "x32.to(bf16)", sh, 6 * n, lambda: x32.to(torch.bfloat16))
        sample("cast_up", "x16.float()", sh, 6 * n, lambda: x16.float())
        sample("add_mixed", "x32 + y16", sh, 10 * n, lambda: x32 + x16)
        sample("add_f32", "x32 + y32", sh, 12 * n, lambda: x32 + y32)
        sample("copy", "y16.copy_(x16)", sh, 4 * n, lambda: torch.empty_like(x16).copy_(x16))
        sample("fill", "zeros fp32", sh, 4 * n, lambda: torch.zeros(T, h, device=DEV))
        w = torch.rand(h, device=DEV) + 0.5
        sample("norm_fwd", "F.rms_norm fp32 fwd", sh, 8 * n, lambda: F.rms_norm(x32, (h,), w, 1e-5))
        xg = x32.clone().requires_grad_(True); wg = w.clone().requires_grad_(True)
        dy = r32(T, h)
        def norm_bwd():
            y = F.rms_norm(xg, (h,), wg, 1e-5)
            torch.autograd.grad(y, (xg, wg), dy)
        # backward alone = (fwd + bwd) - fwd, both medians of flushed calls
        norm_bwd(); torch.cuda.synchronize()
        t_both = timed(norm_bwd, reps, flush)
        t_fwd = timed(lambda: F.rms_norm(xg.detach(), (h,), w, 1e-5), reps, flush)
        rows.append(dict(family="norm_bwd", op="F.rms_norm fp32 bwd (autograd)", shape=sh, bytes=12 * n,
                         seconds=max(t_both - t_fwd, 1e-7)))
        print(f"norm         F.rms_norm fp32 bwd          {sh:22s} {12*n/2**20:9.1f} MiB {(t_both-t_fwd)*1e6:9.1f} us", flush=True)
        del x32, y32, x16, xg, wg, dy
    # weight casts at the runs' weight shapes (params, fp32 -> bf16)
    for (o, i) in ([(6144, 2048), (11264, 2048)] if quick else [(4096, 2048), (6144, 2048), (11264, 2048), (2048, 5632),
                                                               (16384, 3072), (28672, 4096), (4096, 14336)]):
        w32 = r32(o, i)
        sample("cast_down", "weight.to(bf16)", f"{o}x{i}", 6 * o * i, lambda: w32.to(torch.bfloat16))
        g16 = r16(o, i)
        sample("cast_up", "wgrad16.float()", f"{o}x{i}", 6 * o * i, lambda: g16.float())
        del w32, g16
    # score-path kernels of the eager materialised attention (bf16 scores, fp32 softmax)
    for b, hd, s in (SCORES[:2] if quick else SCORES):
        E, sh = b * hd * s * s, f"{b}x{hd}x{s}x{s}"
        sc16 = r16(b, hd, s, s)
        mask = torch.ones(s, s, device=DEV, dtype=torch.bool).triu(1)
        sample("eltwise", "scores * scale (bf16)", sh, 4 * E, lambda: sc16 * 0.0883)
        # out of place: a copy and the fill, 2 kernels x (2 + 2) B per score (attn_masked_fill)
        sample("masked_fill", "masked_fill (bf16)", sh, 8 * E, lambda: sc16.masked_fill(mask, float("-inf")))
        sample("cast_up", "scores.float()", sh, 6 * E, lambda: sc16.float())
        sc32 = sc16.float()
        sample("softmax_fwd", "softmax fp32 fwd", sh, 8 * E, lambda: torch.softmax(sc32, -1))
        y32 = torch.softmax(sc32, -1); g32 = r32(b, hd, s, s)
        sample("softmax_bwd", "softmax fp32 bwd", sh, 12 * E,
               lambda: torch._softmax_backward_data(g32, y32, -1, torch.float32))
        sample("cast_down", "probs.to(bf16)", sh, 6 * E, lambda: y32.to(torch.bfloat16))
        del sc16, sc32, y32, g32
        torch.cuda.empty_cache()
    # eager bf16 elementwise at activation sizes (SwiGLU and RoPE unfused)
    for T, f in ([(4096, 5632)] if quick else [(4096, 4096), (4096, 5632), (4096, 14336)]):
        g, u = r16(T, f), r16(T, f)
        sample("eltwise", "silu (bf16)", f"{T}x{f}", 4 * T * f, lambda: F.silu(g))
        sample("eltwise", "mul (bf16)", f"{T}x{f}", 6 * T * f, lambda: g * u)
        del g, u
    for b, hd, s, kv in ([(1, 16, 4096, 8)] if quick else [(1, 16, 4096, 8), (1, 32, 2048, 8)]):
        k = r16(b, kv, s, 128)
        n = b * kv * s * 128
        sample("repeat", "k.repeat_interleave", f"{b}x{kv}x{s}x128 r{hd//kv}", 2 * n * (1 + hd // kv),
               lambda: k.repeat_interleave(hd // kv, dim=1))
        del k
    # cross entropy over the vocabulary rows (fp32 logits)
    for T, V in (VOCAB[:1] if quick else VOCAB):
        x = r32(T, V) * 4
        sample("log_softmax", "log_softmax fp32 fwd", f"{T}x{V}", 16 * T * V, lambda: torch.log_softmax(x, -1))
        y = torch.log_softmax(x, -1); g = r32(T, V)
        sample("log_softmax", "log_softmax fp32 bwd", f"{T}x{V}", 16 * T * V,
               lambda: torch._log_softmax_backward_data(g, y, -1, torch.float32))
        sample("fill", "zeros fp32", f"{T}x{V}", 4 * T * V, lambda: torch.zeros(T, V, device=DEV))
        del x, y, g
        torch.cuda.empty_cache()
    # fused AdamW over the parameter lists of the runs' models (train_step.MODELS)
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    import train_step as ts
    for name in (["s1.3b"] if quick else ["s0.5b", "s1.3b", "s3b", "s7b-8L"]):
        L, h, ffn, heads, kv, vocab = ts.MODELS[name]
        hd = h // heads
        shapes = [(vocab, h), (vocab, h), (h,)]
        for _ in range(L):
            shapes += [((heads + 2 * kv) * hd, h), (h, heads * hd), (2 * ffn, h), (h, ffn), (h,), (h,)]
        ps = [torch.nn.Parameter(torch.rand(*s, device=DEV) * 0.02) for s in shapes]
        for p in ps:
            p.grad = torch.rand_like(p) * 1e-3
        opt = torch.optim.AdamW(ps, lr=1e-4, fused=True)
        nparam = sum(p.numel() for p in ps)
        sample("adamw", "AdamW(fused) step", f"{name} {nparam/1e9:.3f}e9", 28 * nparam, lambda: opt.step())
        del ps, opt
        torch.cuda.empty_cache()

    prov = dict(gpu=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                driver=subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                      capture_output=True, text=True).stdout.strip(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                command=" ".join(sys.argv), reps=reps)
    with open(out, "w") as f:
        f.write("# eager PyTorch kernel families at the runs' sizes (validation/kernel_bw.py)\n")
        for k, v in prov.items():
            f.write(f"# {k}: {v}\n")
        f.write("# bytes: as mfusim's models/layer_kernels.cpp counts the kernel; seconds: median of flushed calls\n")
        for r in rows:
            f.write(f'\n[[memory]]\nkind = "torch:{r["family"]}"\nop = "{r["op"]}"\nshape = "{r["shape"]}"\n'
                    f'bytes = {r["bytes"]}\nseconds = {r["seconds"]:.6g}\nbandwidth_gbs = {r["bytes"]/r["seconds"]*1e-9:.1f}\n')
    fam = {}
    for r in rows:
        fam.setdefault(r["family"], []).append(r["bytes"] / r["seconds"] * 1e-9)
    print("family medians GB/s:", {k: round(statistics.median(v)) for k, v in fam.items()})


if __name__ == "__main__":
    main()
