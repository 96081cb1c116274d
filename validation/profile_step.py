#!/usr/bin/env python3
"""Where the time of a measured training step goes: GPU kernel time by family,
per pass, for a few configurations of train_step.py (torch.profiler, CUDA activity).

For each configuration: build the model exactly as train_step.py does, 2 warm-up
steps, then one profiled step with a marker per pass. Kernels are grouped by name
(gemm, attention, optimizer, copy/cast, elementwise/norm/other) and summed per pass;
'busy' is the union of kernel intervals, 'wall' the pass's CUDA-event time, so
wall - busy is time the GPU sat idle waiting for the host (Python launch bound).
Writes OUT.csv: config,pass,family,ms,kernels; and OUT.txt: the top kernels per config.
Usage: profile_step.py OUT.csv
"""
import csv, sys
import torch
from torch.profiler import profile, ProfilerActivity

sys.path.insert(0, __import__("os").path.dirname(__file__))
import train_step as ts

CONFIGS = [  # name, seq, mbs, flash, recompute, fused
    ("s0.5b", 4096, 1, 1, 0, 1), ("s0.5b", 4096, 1, 1, 0, 0), ("s1.3b", 4096, 1, 1, 0, 1),
    ("s1.3b", 4096, 1, 0, 0, 1), ("s1.3b", 4096, 1, 1, 1, 1), ("s7b-8L", 4096, 1, 1, 0, 1),
    ("s7b-8L", 4096, 1, 1, 0, 0), ("s3b", 4096, 1, 1, 0, 1),
]


def family(n):
    l = n.lower()
    if "flash" in l or "fmha" in l or "attn" in l:
        return "attention"
    if "adam" in l or "multi_tensor" in l:
        return "optimizer"
    if "gemm" in l or "nvjet" in l or "sm90_xmma" in l or "cutlass" in l or "cublas" in l or "matmul" in l:
        return "gemm"
    if "softmax" in l:
        return "softmax"
    if "memcpy" in l or "memset" in l or "copy" in l or "cast" in l:
        return "copy_cast"
    if "triton" in l:
        return "triton_fused"
    if "norm" in l:
        return "norm"
    if "cross_entropy" in l or "log_softmax" in l or "nll" in l:
        return "loss"
    return "elementwise_other"


def main():
    out = sys.argv[1]
    ts.check_gqa()
    rows, txt = [], []
    for (name, seq, mbs, flash, rec, fused) in CONFIGS:
        cfg = f"{name} seq={seq} mbs={mbs} flash={flash} recompute={rec} fused={fused}"
        model, opt, cos, sin, tok, tgt = ts.setup(name, seq, mbs, flash, fused, rec)

        def step(evs=None):
            if evs: evs[0].record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(tok, tgt, cos, sin)
            if evs: evs[1].record()
            loss.backward()
            if evs: evs[2].record()
            opt.step(); opt.zero_grad(set_to_none=True)
            if evs: evs[3].record()

        for _ in range(2):
            step()
        torch.cuda.synchronize()
        evs = [ts.ev() for _ in range(4)]
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            step(evs)
            torch.cuda.synchronize()
        walls = [evs[0].elapsed_time(evs[1]), evs[1].elapsed_time(evs[2]), evs[2].elapsed_time(evs[3])]
        kern = [(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                if e.device_type.name == "CUDA" and e.time_range.end > e.time_range.start]
        kern.sort()
        if not kern:
            continue
        # pass boundaries: split the kernel timeline in proportion to the event walls from the first kernel
        t0 = kern[0][0]
        bounds = [t0, t0 + walls[0] * 1e3, t0 + (walls[0] + walls[1]) * 1e3, float("inf")]
        agg, tops = {}, {}
        busy = [0.0, 0.0, 0.0]
        last_end = [t0, t0, t0]
        for (a, b, n) in kern:
            p = 0 if a < bounds[1] else (1 if a < bounds[2] else 2)
            f = family(n)
            key = (p, f)
            ms, cnt = agg.get(key, (0.0, 0))
            agg[key] = (ms + (b - a) * 1e-3, cnt + 1)
            tops[n[:110]] = tops.get(n[:110], 0.0) + (b - a) * 1e-3
            s = max(a, last_end[p]); busy[p] += max(0.0, b - s) * 1e-3; last_end[p] = max(last_end[p], b)
        passes = ["fwd", "bwd", "opt"]
        for p in range(3):
            rows.append(dict(config=cfg, **{"pass": passes[p]}, family="wall_event", ms=round(walls[p], 4), kernels=0))
            rows.append(dict(config=cfg, **{"pass": passes[p]}, family="gpu_busy", ms=round(busy[p], 4), kernels=0))
            for (pp, f), (ms, cnt) in sorted(agg.items()):
                if pp == p:
                    rows.append(dict(config=cfg, **{"pass": passes[p]}, family=f, ms=round(ms, 4), kernels=cnt))
        head = len(txt)
        txt.append(f"== {cfg}: fwd {walls[0]:.2f} ms (busy {busy[0]:.2f}), bwd {walls[1]:.2f} (busy {busy[1]:.2f}), "
                   f"opt {walls[2]:.2f} (busy {busy[2]:.2f})")
        for n, ms in sorted(tops.items(), key=lambda x: -x[1])[:25]:
            txt.append(f"  {ms:9.3f} ms  {family(n):18s} {n}")
        print(txt[head], flush=True)
        del model, opt, prof
        torch.cuda.empty_cache()
        write(out, rows, txt)


def write(out, rows, txt):
    with open(out, "w", newline="") as f:
        f.write(f"# GPU kernel time per pass and family of one training step (validation/profile_step.py), "
                f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}\n")
        w = csv.DictWriter(f, fieldnames=["config", "pass", "family", "ms", "kernels"])
        w.writeheader(); w.writerows(rows)
    with open(out.rsplit(".", 1)[0] + ".txt", "w") as f:
        f.write("\n".join(txt) + "\n")


if __name__ == "__main__":
    main()
