#!/usr/bin/env python3
"""Host cost of activation checkpointing (torch.utils.checkpoint, use_reentrant=False) per layer,
inside whole training steps of train_step.py's Model.

Why: in run 4 the s1.3b seq-4096 step with full recompute spent 61.8-69.2 ms in its forward
(3 passes) against 32-45 ms for the same forward without recompute, while the GPU-bound rows'
forwards differ by ~1 ms (s7b-8L) or less: the difference is host time, which the model did
not have (a checkpointed layer's forward runs the same kernels; non-reentrant checkpoint adds
a Python pack hook per saved tensor and its own wrapper per call, and the backward's
recomputation goes through the unpack hooks).
Method: seq 128 (the GPU idle-bound, every kernel a few microseconds), one model per
(layers, fused) with checkpoint switched on and off step by step (model.recompute), the host
wall time (perf_counter) of the forward and of loss.backward() from an idle GPU, as in
host_step.py. Paired: each recompute step against the plain step next to it, so the host's
slow drifts cancel; median over the pairs; per layer from L and L/2 layers (the head, loss and
per-call costs cancel). Usage: host_ckpt.py OUT.csv [--steps N] [--passes P]
"""
import csv, statistics, sys, time
import torch
sys.path.insert(0, __import__("os").path.dirname(__file__))
import train_step as ts

SEQ = 128


def pairs(name, layers, fused, steps):
    """Per step pair: (fwd plain, fwd ckpt, bwd plain, bwd ckpt) host seconds."""
    model, opt, cos, sin, tok, tgt = ts.setup(name, SEQ, 1, 1, fused, 0, layers=layers)
    out, cur = [], {}
    for i in range(6 + 2 * steps):
        rec = (i + (i // 2)) % 2   # order within a pair alternates: 0 1, 1 0, 0 1, ...
        model.recompute = rec
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tok, tgt, cos, sin)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step(); opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 6:
            cur[rec] = (t1 - t0, t2 - t1)
            if i % 2 == 1:
                out.append((cur[0][0], cur[1][0], cur[0][1], cur[1][1]))
    del model, opt
    return out


def main():
    opt = lambda name, d: type(d)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else d
    steps, passes = opt("--steps", 20), opt("--passes", 2)
    ts.check_gqa(); ts.fused_fns()
    name, rows = "s1.3b", []
    L = ts.MODELS[name][0]
    for p in range(passes):
        for fused in (1, 0):
            res = {}
            for layers in (L, L // 2) if p % 2 == 0 else (L // 2, L):
                res[layers] = pairs(name, layers, fused, steps)
            med = {lay: [statistics.median(x[j] for x in v) for j in range(4)] for lay, v in res.items()}
            dif = {lay: [statistics.median(x[1] - x[0] for x in v), statistics.median(x[3] - x[2] for x in v)]
                   for lay, v in res.items()}
            per = [(dif[L][j] - dif[L // 2][j]) / (L - L // 2) for j in range(2)]
            print(f"[{p + 1}] {name} fused={fused}: {L} layers fwd {med[L][0] * 1e3:.2f} -> {med[L][1] * 1e3:.2f} ms, bwd "
                  f"{med[L][2] * 1e3:.2f} -> {med[L][3] * 1e3:.2f} ms; {L // 2} layers fwd {med[L // 2][0] * 1e3:.2f} -> "
                  f"{med[L // 2][1] * 1e3:.2f}, bwd {med[L // 2][2] * 1e3:.2f} -> {med[L // 2][3] * 1e3:.2f}; paired "
                  f"checkpoint cost per layer: fwd {per[0] * 1e6:.0f} us, bwd {per[1] * 1e6:.0f} us "
                  f"(whole model / layers: fwd {dif[L][0] / L * 1e6:.0f}, bwd {dif[L][1] / L * 1e6:.0f} us)", flush=True)
            rows.append(dict(model=name, fused=fused, passno=p + 1, steps=steps, layers=L, half_layers=L // 2,
                             fwd_plain_ms=round(med[L][0] * 1e3, 3), fwd_ckpt_ms=round(med[L][1] * 1e3, 3),
                             bwd_plain_ms=round(med[L][2] * 1e3, 3), bwd_ckpt_ms=round(med[L][3] * 1e3, 3),
                             half_fwd_plain_ms=round(med[L // 2][0] * 1e3, 3), half_fwd_ckpt_ms=round(med[L // 2][1] * 1e3, 3),
                             half_bwd_plain_ms=round(med[L // 2][2] * 1e3, 3), half_bwd_ckpt_ms=round(med[L // 2][3] * 1e3, 3),
                             paired_fwd_diff_ms=round(dif[L][0] * 1e3, 3), paired_bwd_diff_ms=round(dif[L][1] * 1e3, 3),
                             half_paired_fwd_diff_ms=round(dif[L // 2][0] * 1e3, 3),
                             half_paired_bwd_diff_ms=round(dif[L // 2][1] * 1e3, 3),
                             ckpt_fwd_us_per_layer=round(per[0] * 1e6, 1), ckpt_bwd_us_per_layer=round(per[1] * 1e6, 1)))
    with open(sys.argv[1], "w", newline="") as fo:
        fo.write(f"# host cost of torch.utils.checkpoint (use_reentrant=False) per layer inside a step "
                 f"(validation/host_ckpt.py), seq {SEQ}, {steps} pairs of steps, {passes} passes; "
                 f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
                 f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        w = csv.DictWriter(fo, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)


if __name__ == "__main__":
    main()
