#!/usr/bin/env python3
"""FlashAttention written in Triton as llm-foundry's MPT runs it, timed back to back in the probe's format (run 42).

llm-foundry's throughput tables (validation/fsdp rows LF-*) ran `attn_impl: triton`: Tri Dao's 2022 Triton
FlashAttention (llm-foundry llmfoundry/models/layers/flash_attn_triton.py, on triton-pre-mlir), causal, with
MPT's ALiBi as a per-key bias vector. This file is our own kernel with that kernel's algorithm and launch
shape (read there, written here), head_dim 128 only:
- forward: one program per (128-query block, batch x head), a loop over the 128-key blocks up to the diagonal,
  the bias added to the scaled scores, online softmax, num_warps 8, num_stages 1 (no software pipelining);
  the log-sum-exp kept for the backward.
- backward: delta = rowsum(dO * O) first; then either one program per (batch x head) that walks every key
  block in turn and accumulates dQ in fp32 through global memory (load, add, store), or one program per
  (key block, batch x head) that adds its dQ with fp32 atomics ("sequence parallel"); the source autotunes
  between the two, so each shape takes the faster; then dQ is copied to bf16.
  Each key block recomputes P from Q, K, the bias and the log-sum-exp: dV += P^T dO, dP = dO V^T,
  dS = P (dP - delta), dK += dS^T Q, dQ += dS K.
Left out of the source's kernel: its store-and-reload of two row vectors per key block (a workaround for a
2022 compiler bug) and its masks for lengths that are not multiples of 128 (every shape here is). Its
`tl.debug_barrier()` before the bias load of every backward tile (the source's race-condition guard, taken
whenever a bias is given, as MPT always does) is kept since run 43 (`--barrier`, the default; run 42 ran
without it).
The rows ran triton-pre-mlir, whose code generator has no Hopper warpgroup MMA: `--mma v2` compiles with
today's Triton with DISABLE_MMA_V3=1 (Ampere's mma.sync, the instruction set the 2022 compiler emitted on
Hopper); `--mma v3` with today's default (Hopper's wgmma). Either is today's compiler: its scheduling is no
worse than 2022's, so the time is a lower bound on the rows' kernel.

Usage: attention_triton.py OUT_FRAGMENT.toml --mma v2|v3 [--back-to-back N] [--quick] [--no-barrier] [--both-launches]
The environment variable DISABLE_MMA_V3 must match --mma (run.sh sets it; the script refuses otherwise).
Output: [[attention]] tables with impl = "triton_flash" (fwd and bwd, back to back, FA2's FLOP convention:
causal-halved, bwd = 2.5 x fwd) plus, at the llm-foundry rows' shapes, the same calls through SDPA's
FLASH_ATTENTION backend (impl = "flash_same_run", comparison only: `mfusim calibrate` fits neither name
unless asked) and a correctness check against SDPA's math backend with the same bias.
"""
import math, os, statistics, sys
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_sdpa import timed as timed_median_min   # noqa: E402  back to back (--back-to-back N calls per timing)


def timed(fn):
    """Median of 7 back-to-back timings (attention_sdpa.py's timed() returns the median and the minimum)."""
    return timed_median_min(fn)[0]

MMA = sys.argv[sys.argv.index("--mma") + 1] if "--mma" in sys.argv else "v3"
if MMA not in ("v2", "v3"):
    sys.exit("--mma: v2 or v3")
if (os.environ.get("DISABLE_MMA_V3", "0") in ("1", "true", "on")) != (MMA == "v2"):
    sys.exit("DISABLE_MMA_V3 must be 1 for --mma v2 and unset for --mma v3")
LOOP = int(sys.argv[sys.argv.index("--back-to-back") + 1]) if "--back-to-back" in sys.argv else 1   # as attention_sdpa.py, whose timed() reads the same flag
QUICK = "--quick" in sys.argv
BARRIER = "--no-barrier" not in sys.argv
# Run 43: both backward launches written for every shape (launch = "per_head" | "split"; fastest = whether the
# source's autotuner would keep it), and a wider set of (batch x heads) for the per-(batch, head) launch's waves.
BOTH = "--both-launches" in sys.argv
BLOCK = 128
D = 128


@triton.jit
def _fwd(Q, K, V, Bias, O, Lse, scale, sb, sh, sm, nheads, seqlen,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HD: tl.constexpr):
    start_m = tl.program_id(0)
    off_hb = tl.program_id(1)
    off_b = off_hb // nheads
    off_h = off_hb % nheads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HD)
    base = off_b * sb + off_h * sh
    q = tl.load(Q + base + offs_m[:, None] * sm + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    lse_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    acc = tl.zeros([BLOCK_M, HD], dtype=tl.float32)
    end_n = tl.minimum((start_m + 1) * BLOCK_M, seqlen)
    for start_n in range(0, end_n, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(K + base + (start_n + offs_n)[:, None] * sm + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k))
        qk += tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], 0, float("-inf"))
        bias = tl.load(Bias + off_h * seqlen + start_n + offs_n).to(tl.float32)
        qk = qk * scale + bias[None, :]
        m_ij = tl.maximum(tl.max(qk, 1), lse_i)
        p = tl.exp(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        acc = acc * tl.exp(m_i - m_ij)[:, None]
        v = tl.load(V + base + (start_n + offs_n)[:, None] * sm + offs_d[None, :])
        acc += tl.dot(p.to(v.dtype), v)
        m_i = m_ij
        lse_i = m_ij + tl.log(tl.exp(lse_i - m_ij) + l_ij)
    acc = acc * tl.exp(m_i - lse_i)[:, None]
    tl.store(Lse + off_hb * seqlen + offs_m, lse_i)
    tl.store(O + base + offs_m[:, None] * sm + offs_d[None, :], acc.to(O.dtype.element_ty))


@triton.jit
def _bwd_pre(O, DO, Delta, sb, sh, sm, nheads, seqlen, BLOCK_M: tl.constexpr, HD: tl.constexpr):
    start_m = tl.program_id(0)
    off_hb = tl.program_id(1)
    off_b = off_hb // nheads
    off_h = off_hb % nheads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HD)
    base = off_b * sb + off_h * sh
    o = tl.load(O + base + offs_m[:, None] * sm + offs_d[None, :]).to(tl.float32)
    do = tl.load(DO + base + offs_m[:, None] * sm + offs_d[None, :]).to(tl.float32)
    tl.store(Delta + off_hb * seqlen + offs_m, tl.sum(o * do, axis=1))


@triton.jit
def _bwd_col(start_n, Q, K, V, Bias, DO, DQ, DK, DV, Lse, Delta, scale, base, sm, off_h, seqlen,
             ATOMIC: tl.constexpr, BARRIER: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             HD: tl.constexpr):
    begin_m = ((start_n * BLOCK_N) // BLOCK_M) * BLOCK_M
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HD)
    k = tl.load(K + base + offs_n[:, None] * sm + offs_d[None, :])
    v = tl.load(V + base + offs_n[:, None] * sm + offs_d[None, :])
    bias = tl.load(Bias + off_h * seqlen + offs_n).to(tl.float32)
    dv = tl.zeros([BLOCK_N, HD], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N, HD], dtype=tl.float32)
    for start_m in range(begin_m, seqlen, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        rows = start_m + offs_m
        q = tl.load(Q + base + rows[:, None] * sm + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k))
        qk = tl.where(rows[:, None] >= offs_n[None, :], qk, float("-inf"))
        if BARRIER:
            tl.debug_barrier()   # the source's guard before its bias load, every tile
        qk = qk * scale + bias[None, :]
        lse = tl.load(Lse + rows)
        p = tl.exp(qk - lse[:, None])
        do = tl.load(DO + base + rows[:, None] * sm + offs_d[None, :])
        dv += tl.dot(tl.trans(p.to(do.dtype)), do)
        dp = tl.dot(do, tl.trans(v))
        di = tl.load(Delta + rows)
        ds = (p * (dp - di[:, None]) * scale).to(q.dtype)
        dk += tl.dot(tl.trans(ds), q)
        dq_ptrs = DQ + base + rows[:, None] * sm + offs_d[None, :]
        if ATOMIC:
            tl.atomic_add(dq_ptrs, tl.dot(ds, k))
        else:
            dq = tl.load(dq_ptrs, eviction_policy="evict_last")
            dq += tl.dot(ds, k)
            tl.store(dq_ptrs, dq, eviction_policy="evict_last")
    tl.store(DV + base + offs_n[:, None] * sm + offs_d[None, :], dv.to(DV.dtype.element_ty))
    tl.store(DK + base + offs_n[:, None] * sm + offs_d[None, :], dk.to(DK.dtype.element_ty))


@triton.jit
def _bwd(Q, K, V, Bias, DO, DQ, DK, DV, Lse, Delta, scale, sb, sh, sm, nheads, seqlen,
         SEQ_PARALLEL: tl.constexpr, BARRIER: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
         HD: tl.constexpr):
    off_hb = tl.program_id(1)
    off_b = off_hb // nheads
    off_h = off_hb % nheads
    base = off_b * sb + off_h * sh
    Lse += off_hb * seqlen
    Delta += off_hb * seqlen
    if SEQ_PARALLEL:
        _bwd_col(tl.program_id(0), Q, K, V, Bias, DO, DQ, DK, DV, Lse, Delta, scale, base, sm, off_h, seqlen,
                 True, BARRIER, BLOCK_M, BLOCK_N, HD)
    else:
        for start_n in range(0, tl.cdiv(seqlen, BLOCK_N)):
            _bwd_col(start_n, Q, K, V, Bias, DO, DQ, DK, DV, Lse, Delta, scale, base, sm, off_h, seqlen,
                     False, BARRIER, BLOCK_M, BLOCK_N, HD)


def alibi(H, s, device):
    """MPT's ALiBi bias per key position: -slope_h * (s - 1 - j) (constant per query row up to a shift)."""
    slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], device=device)
    pos = torch.arange(1 - s, 1, device=device, dtype=torch.float32)
    return (slopes[:, None] * pos[None, :]).to(torch.bfloat16).contiguous()   # [H, s]


def forward(q, k, v, bias):
    b, s, H, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((b, H, s), device=q.device, dtype=torch.float32)
    _fwd[(s // BLOCK, b * H)](q, k, v, bias, o, lse, 1.0 / math.sqrt(d), q.stride(0), q.stride(2), q.stride(1),
                              H, s, BLOCK_M=BLOCK, BLOCK_N=BLOCK, HD=D, num_warps=8, num_stages=1)
    return o, lse


def backward(q, k, v, bias, o, lse, do, seq_parallel):
    b, s, H, d = q.shape
    delta = torch.empty_like(lse)
    _bwd_pre[(s // BLOCK, b * H)](o, do, delta, q.stride(0), q.stride(2), q.stride(1), H, s, BLOCK_M=BLOCK, HD=D)
    dq = torch.zeros((b, s, H, d), device=q.device, dtype=torch.float32)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    grid = (s // BLOCK if seq_parallel else 1, b * H)
    _bwd[grid](q, k, v, bias, do, dq, dk, dv, lse, delta, 1.0 / math.sqrt(d), q.stride(0), q.stride(2), q.stride(1),
               H, s, SEQ_PARALLEL=seq_parallel, BARRIER=BARRIER, BLOCK_M=BLOCK, BLOCK_N=BLOCK, HD=D, num_warps=8,
               num_stages=1)
    return dq.to(q.dtype), dk, dv


def check(lines):
    """Our kernel against SDPA's math backend with the same causal + ALiBi bias (fp32 reference)."""
    torch.manual_seed(0)
    b, s, H = 2, 512, 4
    q, k, v, do = (torch.randn(b, s, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    bias = alibi(H, s, "cuda")
    o, lse = forward(q, k, v, bias)
    qr, kr, vr = (t.float().transpose(1, 2).requires_grad_() for t in (q, k, v))
    mask = torch.full((s, s), float("-inf"), device="cuda").triu(1) + bias.float()[:, None, :]
    ref = F.scaled_dot_product_attention(qr, kr, vr, attn_mask=mask[None])
    ref.backward(do.float().transpose(1, 2))
    errs = {"o": (o.float().transpose(1, 2) - ref).abs().max().item()}
    for sp in (False, True):
        dq, dk, dv = backward(q, k, v, bias, o, lse, do, sp)
        for name, got, want in (("dq", dq, qr.grad), ("dk", dk, kr.grad), ("dv", dv, vr.grad)):
            errs[f"{name}{'_sp' if sp else ''}"] = (got.float().transpose(1, 2) - want).abs().max().item()
    ok = all(e < 0.06 for e in errs.values())
    print("check against SDPA math (max abs error):", {k: round(e, 4) for k, e in errs.items()}, "ok" if ok else "FAILED", flush=True)
    lines.append(f"\n[triton_flash_check]\nmma = \"{MMA}\"\nbarrier = {'true' if BARRIER else 'false'}\nmax_abs_error = {max(errs.values()):.4g}\nok = {'true' if ok else 'false'}")
    return ok


# llm-foundry's MPT shapes (validation/fsdp/rows.csv LF-*: d_model / 128 heads, seq 2048) at the rows' micro-batches.
ROW_SHAPES = [(12, 16), (8, 20), (6, 32), (16, 40), (8, 56), (8, 64), (2, 64), (3, 56), (14, 56), (4, 64), (16, 20)]


def main():
    out = sys.argv[1]
    lines = ["", f"# ---- FlashAttention in Triton as llm-foundry runs it, {MMA}, back to back ({LOOP} calls per timing), "
             "validation/attention_triton.py ----",
             f"[triton_flash_provenance]\ntorch = \"{torch.__version__}\"\ntriton = \"{triton.__version__}\"\n"
             f"gpu = \"{torch.cuda.get_device_name(0)}\"\nmma = \"{MMA}\"\nbarrier = {'true' if BARRIER else 'false'}\ntiming = \"back_to_back\"\ncalls_per_timing = {LOOP}"]
    check(lines)
    shapes = []
    for (b, H) in ((1, 32), (1, 16), (1, 8), (1, 64), (2, 16), (4, 8)):
        for s in ((1024, 4096) if QUICK else (512, 1024, 2048, 4096, 8192, 16384)):
            if b * H * s * s <= 2 ** 37:
                shapes.append((b, H, s))
    shapes += [(b, H, 2048) for (b, H) in ROW_SHAPES]
    if BOTH:   # the per-(batch, head) launch from 8 to 528 programs (waves of 132 SMs), three lengths
        for s in (1024, 2048, 4096):
            for bh in (8, 32, 64, 96, 132, 160, 200, 264, 330, 396, 528):
                b, H = (bh // 8, 8) if bh % 8 == 0 else (bh // 2, 2)
                if (b, H, s) not in shapes:
                    shapes.append((b, H, s))
    for (b, H, s) in shapes:
        torch.manual_seed(1)
        q, k, v, do = (torch.randn(b, s, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        bias = alibi(H, s, "cuda")
        o, lse = forward(q, k, v, bias)
        tf = timed(lambda: forward(q, k, v, bias))
        tb = {sp: timed(lambda: backward(q, k, v, bias, o, lse, do, sp)) for sp in (False, True)}
        sp = min(tb, key=tb.get)   # the source's autotuner keeps the faster of its two configurations
        flops_f = 4.0 * b * H * s * s * D * 0.5
        samples = [("fwd", tf, flops_f, None)]
        samples += [("bwd", tb[x], 2.5 * flops_f, x) for x in ((False, True) if BOTH else (sp,))]
        for pss, t, fl, x in samples:
            launch = "" if x is None else (f"launch = \"{'split' if x else 'per_head'}\"\nfastest = {'true' if x == sp else 'false'}\n"
                                           if BOTH else "")
            lines.append(f"\n[[attention]]\nimpl = \"triton_flash\"\nsource = \"validation/attention_triton.py, mma {MMA}, "
                         f"ALiBi vector bias{', sequence-parallel backward' if pss == 'bwd' and x else ''}, back to back\"\n"
                         f"pass = \"{pss}\"\n{launch}timing = \"back_to_back\"\nbatch = {b}\nheads = {H}\nkv_heads = {H}\nseq = {s}\n"
                         f"seq_kv = {s}\nhead_dim = 128\ncausal = true\nseconds = {t:.6g}\nflops = {fl:.6g}\n"
                         f"flops_convention = \"causal-halved; bwd = 2.5 x fwd (FA2 count incl. recompute)\"")
        print(f"triton {MMA} b={b:2d} H={H:2d} s={s:6d} fwd {tf*1e3:8.3f} ms {flops_f/tf*1e-12:6.1f} TF/s  "
              f"bwd {tb[False]*1e3:8.3f} / seq-par {tb[True]*1e3:8.3f} ms {2.5*flops_f/tb[sp]*1e-12:6.1f} TF/s", flush=True)
        if (b, H) in ROW_SHAPES and s == 2048:   # FlashAttention-2 at the same call, same process
            qt, kt, vt = (t.detach().transpose(1, 2).requires_grad_() for t in (q, k, v))
            dot = do.transpose(1, 2)
            from torch.nn.attention import sdpa_kernel, SDPBackend
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                ff = timed(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True))
                ffb = timed(lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True).backward(dot))
            for pss, t, fl in (("fwd", ff, flops_f), ("bwd", ffb - ff, 2.5 * flops_f)):
                lines.append(f"\n[[attention_same_run]]\nimpl = \"flash_same_run\"\nsource = \"torch SDPA backend FLASH_ATTENTION, "
                             f"back to back, no bias\"\npass = \"{pss}\"\nbatch = {b}\nheads = {H}\nseq = {s}\nhead_dim = 128\n"
                             f"causal = true\nseconds = {t:.6g}")
            print(f"   fa2 b={b:2d} H={H:2d} s={s:6d} fwd {ff*1e3:8.3f} ms  bwd {(ffb-ff)*1e3:8.3f} ms   "
                  f"triton / fa2: fwd {tf/ff:5.2f} bwd {tb[sp]/(ffb-ff):5.2f} fwd+bwd {(tf+tb[sp])/ffb:5.2f}", flush=True)
            del qt, kt, vt
        del q, k, v, do, o, lse
        torch.cuda.empty_cache()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
