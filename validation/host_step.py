#!/usr/bin/env python3
"""Host issue time per decoder layer inside a whole training step (train_step.py's Model, its
autocast, loss, backward and AdamW), at seq 128 so the GPU is never the bottleneck: the
host-side wall time of the forward and of loss.backward() (perf_counter; the GPU idle at each
step's start, as in train_step.py, which synchronises every step). Per layer = the difference
between the model with L and with L/2 layers over L/2 (embedding, head, loss and the per-call
costs cancel). Median of `steps` steps after warm-up; several passes interleaved.
Usage: host_step.py OUT.csv
"""
import csv, statistics, sys, time
import torch
sys.path.insert(0, __import__("os").path.dirname(__file__))
import train_step as ts

SEQ, STEPS, PASSES = 128, 10, 2


def host_step(name, layers, flash, fused):
    model, opt, cos, sin, tok, tgt = ts.setup(name, SEQ, 1, flash, fused, 0, layers=layers)
    f, b = [], []
    for i in range(3 + STEPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tok, tgt, cos, sin)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step(); opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 3:
            f.append(t1 - t0); b.append(t2 - t1)
    del model, opt
    return statistics.median(f), statistics.median(b)


def main():
    ts.check_gqa(); ts.fused_fns()
    rows = []
    cfgs = [(n, fl, fu) for n in ("s1.3b",) for fu in (1, 0) for fl in (1, 0)]
    res = {}
    for p in range(PASSES):
        for (n, fl, fu) in cfgs:
            L = ts.MODELS[n][0]
            a = host_step(n, L, fl, fu); bh = host_step(n, L // 2, fl, fu)
            res.setdefault((n, fl, fu), []).append((a, bh))
            pf = (a[0] - bh[0]) / (L - L // 2); pb = (a[1] - bh[1]) / (L - L // 2)
            print(f"[{p+1}] {n} flash={fl} fused={fu}: fwd {a[0]*1e3:.2f} / {bh[0]*1e3:.2f} ms, bwd {a[1]*1e3:.2f} / "
                  f"{bh[1]*1e3:.2f} ms -> per layer fwd {pf*1e6:.0f} us, bwd {pb*1e6:.0f} us", flush=True)
            rows.append(dict(model=n, flash=fl, fused=fu, passno=p + 1, layers=L, fwd_host_ms=round(a[0] * 1e3, 3),
                             bwd_host_ms=round(a[1] * 1e3, 3), half_layers=L // 2, half_fwd_host_ms=round(bh[0] * 1e3, 3),
                             half_bwd_host_ms=round(bh[1] * 1e3, 3), layer_fwd_host_us=round(pf * 1e6, 1),
                             layer_bwd_host_us=round(pb * 1e6, 1)))
    with open(sys.argv[1], "w", newline="") as fo:
        fo.write(f"# host time per layer inside a step (validation/host_step.py), seq {SEQ}, median of {STEPS} steps, "
                 f"{PASSES} passes; {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
                 f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        w = csv.DictWriter(fo, fieldnames=list(rows[0].keys()))
        w.writeheader(); w.writerows(rows)


if __name__ == "__main__":
    main()
