#!/usr/bin/env python3
"""Run 21: context parallelism's attention compute as Transformer Engine's ring runs it, on one GPU.

What a cp-rank computes in TE's AttnFuncWithCPAndKVP2P (transformer_engine/pytorch/attention/
dot_product_attention/context_parallel.py, NVIDIA/TransformerEngine @d0067d0), load-balanced causal
chunks, sequence S, L = S/cp tokens per rank:
  step 0        "diagonal":       L queries x L keys, causal
  steps 1..cp-1 "lower-triangle": L queries x L/2 keys, no mask  (ranks whose K/V source is earlier)
                "upper-triangle": L/2 queries x L keys, no mask  (the others)
  forward merge: per step the log-sum-exp correction ([b, H, L] fp32), after the loop one output
                 correction per step (out += out_step * exp(lse_step - lse), [b, L, H, d] bf16)
  backward:      per step dq.add_(dq_) and dk/dv.add_ (bf16), whole or half as the kind says.
Everything here is compute on one GPU (no transfer: the ring's P2P needs a second GPU); it is what the
simulator's per-step lowering (layer::cp_step_times) prices. Kernels through torch SDPA with the cuDNN
backend forced, as the shipped calibration's attention fit (hardware/calibration/h200.toml) was measured
(validation/attention_sdpa.py): bf16, head_dim 128, GQA via enable_gqa; merge passes as eager torch ops
and, where torch.compile works, compiled (TE's jit_fuser fuses them).
Output CSV: case,b,H,Hk,S,cp,item,ms (median of repeats, CUDA events; no heater: the calibration's state).
Usage: cp_ring.py OUT.csv [--loop N]
--loop N (run 21b): N calls back to back between the two events, the median divided by N: the host
issues ahead of the GPU as in a training step, so a short call's host dispatch is not in its time
(run 21 timed one call per event pair, as validation/attention_sdpa.py and the calibration did). Adds
square causal calls of the calibration's kind (32 heads, 8 KV heads) so the fit's per-call overhead
can be checked under the same timing.
"""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

BE = SDPBackend.CUDNN_ATTENTION
CASES = [  # name, batch, heads per rank, kv heads per rank, S, cp  (validation/modern rows' CP layouts)
    ("llama3-8b tp1 cp2", 1, 32, 8, 8192, 2),
    ("llama3-8b tp1 cp4", 1, 32, 8, 8192, 4),
    ("llama3-70b tp4 cp2", 1, 16, 2, 8192, 2),
    ("llama3.1-405b tp8 cp2", 1, 16, 1, 8192, 2),
    ("llama3.1-405b tp4 cp2", 1, 32, 2, 8192, 2),
    ("llama2-7b tp2 cp2 32k", 1, 16, 16, 32768, 2),
    ("llama2-7b tp4 cp4 128k", 1, 8, 8, 131072, 4),
]


LOOP = int(sys.argv[sys.argv.index("--loop") + 1]) if "--loop" in sys.argv else 1


def timed(fn, repeats=9):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    for _ in range(repeats):
        a.record()
        for _ in range(LOOP):
            fn()
        b.record(); b.synchronize()
        v.append(a.elapsed_time(b) / LOOP)
    return statistics.median(v)


def t(*shape, g=False, dtype=torch.bfloat16):
    return torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=g)


def attn_times(b, H, Hk, sq, skv, causal):
    """Forward and backward ms of one SDPA call (backward = forward+backward minus forward)."""
    q, k, v = t(b, H, sq, 128, g=True), t(b, Hk, skv, 128, g=True), t(b, Hk, skv, 128, g=True)
    do = t(b, H, sq, 128)
    gqa = Hk != H
    with sdpa_kernel([BE]):
        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        def fb():
            f().backward(do)
        tf = timed(f)
        tfb = timed(fb)
    del q, k, v, do
    return tf, tfb - tf


def lse_correction(lse, lse_step):
    mx = torch.max(lse, lse_step); mn = torch.min(lse, lse_step)
    lse.copy_(mx + torch.log1p(torch.exp(mn - mx)))


def out_correction(out, out_step, lse, lse_step):
    c = torch.exp(lse_step - lse).movedim(2, 1).unsqueeze(-1)   # [b, H, L] -> [b, L, H, 1]
    out.add_(out_step * c)


def main():
    out_path = sys.argv[1]
    rows = []
    try:
        lse_c = torch.compile(lse_correction); out_c = torch.compile(out_correction)
        x = t(1, 4, 256, dtype=torch.float32); lse_c(x, x.clone()); oo = t(1, 256, 4, 128); out_c(oo, oo.clone(), x, x.clone())
        compiled = True
    except Exception as e:  # no compiler on the machine: eager only
        print("torch.compile unavailable:", str(e).splitlines()[0][:160], file=sys.stderr)
        compiled = False
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name(0)}, compiled merge: {compiled}")
    for (name, b, H, Hk, S, cp) in CASES:
        t0 = time.time()
        L = S // cp
        rec = lambda item, ms: rows.append((name, b, H, Hk, S, cp, item, ms))
        try:
            if S <= 32768:   # the whole sequence as one causal call (its 1/cp is what a rank's share would be)
                wf, wb = attn_times(b, H, Hk, S, S, True)
                rec("whole_f", wf); rec("whole_b", wb)
            df, db = attn_times(b, H, Hk, L, L, True); rec("diag_f", df); rec("diag_b", db)
            lf, lb = attn_times(b, H, Hk, L, L // 2, False); rec("lower_f", lf); rec("lower_b", lb)
            uf, ub = attn_times(b, H, Hk, L // 2, L, False); rec("upper_f", uf); rec("upper_b", ub)
            # merge passes
            lse, lse_s = t(b, H, L, dtype=torch.float32), t(b, H, L, dtype=torch.float32)
            o, o_s = t(b, L, H, 128), t(b, L, H, 128)
            rec("lse_corr_eager", timed(lambda: lse_correction(lse, lse_s)))
            rec("out_corr_eager", timed(lambda: out_correction(o, o_s, lse, lse_s)))
            if compiled:
                rec("lse_corr_compiled", timed(lambda: lse_c(lse, lse_s)))
                rec("out_corr_compiled", timed(lambda: out_c(o, o_s, lse, lse_s)))
            dq, dq_ = t(b, H, L, 128), t(b, H, L, 128)
            dk, dk_ = t(b, Hk, L, 128), t(b, Hk, L, 128)
            rec("dq_add", timed(lambda: dq.add_(dq_)))
            rec("dkv_add", timed(lambda: (dk.add_(dk_), dk.add_(dk_))))
            del lse, lse_s, o, o_s, dq, dq_, dk, dk_
        except Exception as e:
            print(f"{name}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        torch.cuda.empty_cache()
        print(f"{name}: " + ", ".join(f"{r[6]} {r[7]:.3f}" for r in rows if r[0] == name) + f"  ({time.time()-t0:.1f} s)", flush=True)
    if LOOP > 1:   # square causal calls as the calibration measured them
        for S in (1024, 2048, 4096, 8192, 16384):
            wf, wb = attn_times(1, 32, 8, S, S, True)
            rows.append((f"square h32 kv8 {S}", 1, 32, 8, S, 1, "whole_f", wf))
            rows.append((f"square h32 kv8 {S}", 1, 32, 8, S, 1, "whole_b", wb))
            print(f"square {S}: f {wf:.3f} b {wb:.3f}", flush=True)
    with open(out_path, "w") as f:
        f.write("case,b,H,Hk,S,cp,item,ms\n")
        for r in rows:
            f.write(",".join(str(x) for x in r[:7]) + f",{r[7]:.6g}\n")


if __name__ == "__main__":
    main()
