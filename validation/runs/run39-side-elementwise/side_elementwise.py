#!/usr/bin/env python3
"""Run 39: PyTorch FSDP's gradient elementwise kernels on a side stream beside compute (one H200).

PyTorch FSDP runs memory-bound kernels over each unit's whole unsharded gradient on its reduce-scatter
(post-backward) stream while the next unit's backward computes:
  fsdp1_post   FSDP1 (torch 2.1, llm-foundry's rows) with reduce_dtype fp32: the bf16 gradient cast to fp32
               (flat_param.grad.to(reduce_dtype)), then the in-place pre-division (_div_if_needed):
               2 + 4 + 4 + 4 = 14 bytes per parameter
  fsdp2_copyin FSDP2's foreach_reduce copy-in (torch._chunk_cat) of the bf16 gradients into the fp32
               reduce-scatter input: 2 + 4 = 6 bytes per parameter
The simulator puts these on the reduce-scatter stream with no contention class: the compute beside them
is not slowed and they run at their alone rate. This run measures both directions: how much compute
(GEMMs, flash attention, a memory-bound kernel) slows while such a kernel runs beside it, and how much
the side kernel stretches.

Method (CUDA events, one process): main work = N back-to-back launches of one kernel on stream A; side
work = the side sequence on stream B, made to start after k of the N main launches (B waits on an event
A records), so it runs inside the main's span. Alone windows of each (main alone, side alone) are paired
with each concurrent window; passes alternate; medians over passes. With T_A0 / T_B0 alone and T_A / T_B
concurrent (each stream's own span): the main's slowdown while the side runs is
  s = T_B / (T_B - (T_A - T_A0))            (main's lost time spread over the side's window)
and the side's stretch is T_B / T_B0. Checked per window: the side starts after the main and ends
before it (else the window is reported as not inside, and not used).
Output: side_elementwise.csv (every window), summary.txt (medians).
Usage: side_elementwise.py OUTDIR [--passes N]
"""
import csv, os, statistics, sys, time
import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
PASSES = int(sys.argv[sys.argv.index("--passes") + 1]) if "--passes" in sys.argv else 5
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
torch.manual_seed(0)

# Unit sizes: MPT-13b block (12 d^2 = 314.6M parameters, d = 5120), Llama-3-8B block (218.1M).
UNIT_13B = 12 * 5120 * 5120
UNIT_8B = 4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336


def side_fsdp1(n):
    g16 = torch.randn(n, device=dev, dtype=torch.bfloat16)
    def run():
        g32 = g16.to(torch.float32)
        g32.div_(4.0)
        return g32
    return run, 14.0 * n


def side_fsdp2(n):
    g16 = torch.randn(n, device=dev, dtype=torch.bfloat16)
    buf = torch.empty(n, device=dev, dtype=torch.float32)
    def run():
        buf.copy_(g16)
        return buf
    return run, 6.0 * n


def main_gemm(m, k, n):
    # Two operand sets alternated so that the inputs do not sit in L2 between launches.
    a = [torch.randn(m, k, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    b = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    state = [0]
    def run():
        i = state[0] = state[0] ^ 1
        torch.mm(a[i], b[i], out=c)
    return run


def main_attn(b, h, s, d):
    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    go = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
    from torch.nn.attention import sdpa_kernel, SDPBackend
    def run():
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(o, (q, k, v), go)
    return run


def main_gelu(m, n):
    x = [torch.randn(m, n, device=dev, dtype=torch.bfloat16) for _ in range(2)]
    y = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    state = [0]
    def run():
        i = state[0] = state[0] ^ 1
        torch.ops.aten.gelu.out(x[i], out=y)
    return run


MAINS = [  # name, builder
    ("gemm_mpt13b_fc1", lambda: main_gemm(4096, 5120, 20480)),       # llm-foundry 13b, mbs 2 x 2048
    ("gemm_llama8b_fc1", lambda: main_gemm(16384, 4096, 14336)),     # torchtitan 8B, mbs 2 x 8192
    ("attn_fa2_mpt13b", lambda: main_attn(2, 40, 2048, 128)),        # F + B, causal
    ("gelu_mpt13b", lambda: main_gelu(4096, 20480)),                 # memory-bound main
]
SIDES = [
    ("fsdp1_post_13b", lambda: side_fsdp1(UNIT_13B)),
    ("fsdp2_copyin_8b", lambda: side_fsdp2(UNIT_8B)),
]


def enqueue(fn, reps, stream, after=None):
    """fn() reps times on `stream` (after the event `after`, if given), between two timing events."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        if after is not None:
            stream.wait_event(after)
        s.record(stream)
        for _ in range(reps):
            fn()
        e.record(stream)
    return s, e


def span(fn, reps, stream):
    s, e = enqueue(fn, reps, stream)
    torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3


def concurrent(mfn, mreps, sfn, sreps, lead, sA, sB):
    a0, _ = enqueue(mfn, lead, sA)
    mid = torch.cuda.Event()
    mid.record(sA)
    b0, b1 = enqueue(sfn, sreps, sB, after=mid)
    _, a1 = enqueue(mfn, mreps - lead, sA)
    torch.cuda.synchronize()
    tA = a0.elapsed_time(a1) / 1e3
    tB = b0.elapsed_time(b1) / 1e3
    inside = a0.elapsed_time(b0) >= 0 and b1.elapsed_time(a1) >= 0
    return tA, tB, inside


def main():
    sA, sB = torch.cuda.Stream(), torch.cuda.Stream()
    props = torch.cuda.get_device_properties(0)
    with open(os.path.join(OUT, "env.txt"), "w") as f:
        f.write(f"torch {torch.__version__} cuda {torch.version.cuda} device {props.name} sms {props.multi_processor_count}\n")
    rows = []
    t_start = time.time()
    sides = {name: b() for name, b in SIDES}
    for mname, mb in MAINS:
        mfn = mb()
        for _ in range(3):
            mfn()
        torch.cuda.synchronize()
        one = span(mfn, 20, sA) / 20
        for sname, (sfn, sbytes) in sides.items():
            sfn(); torch.cuda.synchronize()
            sreps = 4
            tb0 = span(sfn, sreps, sB)
            # The main covers ~4x the side: lead ~1x the side, then the rest.
            mreps = max(8, int(round(4.0 * tb0 / one)))
            lead = max(2, int(round(1.0 * tb0 / one)))
            for p in range(PASSES):
                ta0 = span(mfn, mreps, sA)
                tb0p = span(sfn, sreps, sB)
                tA, tB, inside = concurrent(mfn, mreps, sfn, sreps, lead, sA, sB)
                lost = tA - ta0
                s = tB / (tB - lost) if tB - lost > 0 else float("inf")
                rows.append(dict(main=mname, side=sname, p=p, main_one_ms=one * 1e3, mreps=mreps, lead=lead,
                                 sreps=sreps, tA0_ms=ta0 * 1e3, tB0_ms=tb0p * 1e3, tA_ms=tA * 1e3, tB_ms=tB * 1e3,
                                 inside=int(inside), main_slowdown=s, side_stretch=tB / tb0p,
                                 side_alone_gbs=sbytes * sreps / tb0p / 1e9,
                                 hidden_frac=(ta0 + tb0p - tA) / tb0p))
            print(f"{mname:18s} {sname:16s} done ({time.time() - t_start:.0f} s)", flush=True)
    with open(os.path.join(OUT, "side_elementwise.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    lines = ["main               side             main alone  side alone (GB/s)  main slowdown [min-max]  side stretch  side hidden  inside"]
    for mname, _ in MAINS:
        for sname, _ in SIDES:
            rs = [r for r in rows if r["main"] == mname and r["side"] == sname]
            ok = [r for r in rs if r["inside"]]
            if not ok:
                lines.append(f"{mname:18s} {sname:16s} no window had the side inside the main")
                continue
            med = lambda key: statistics.median(r[key] for r in ok)
            lines.append(f"{mname:18s} {sname:16s} {med('main_one_ms'):7.3f} ms  {med('tB0_ms')/4:7.3f} ms ({med('side_alone_gbs'):5.0f})"
                         f"  {med('main_slowdown'):6.3f} [{min(r['main_slowdown'] for r in ok):.3f}-{max(r['main_slowdown'] for r in ok):.3f}]"
                         f"   {med('side_stretch'):6.3f}      {med('hidden_frac'):6.3f}     {len(ok)}/{len(rs)}")
    txt = "\n".join(lines)
    print(txt)
    open(os.path.join(OUT, "summary.txt"), "w").write(txt + "\n")


if __name__ == "__main__":
    main()
