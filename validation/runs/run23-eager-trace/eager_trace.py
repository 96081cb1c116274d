#!/usr/bin/env python3
"""Every GPU kernel of torchtitan's eager Llama-3-8B block (validation/fsdp/sac_probe.py's Block:
torchtitan/models/llama/model.py at 4d88a8a44fe439f73f564b83d60b29a906ef3507, Dec 2024) on one GPU,
forward and backward, under AC none, per-op SAC ("op", torchtitan's _custom_policy) and full,
with the aten op that launched each kernel and that op's input shapes and dtypes
(torch.profiler, record_shapes; the method of validation/kernel_trace.py).

Why (run 18): the eager block runs 9-12% slower than its modelled kernels and per-op SAC's
recompute 25% more; this lists the kernels the block really launches so that each can be
matched to models/layer_kernels (the recompute = the op-SAC backward's kernels less AC none's).
Per mode: 3 warm-up iterations, then 5 timed (CUDA events: the median, like sac_probe.py), then
one profiled; the forward and backward are synchronised and marked FWD / BWD.
Writes OUT/trace.csv (mode,pass,seq_no,kernel,dur_us,op,input_dims,input_types) and
OUT/timing.csv. Usage: eager_trace.py OUT [--layers 2] [--seq 8192] [--mbs 1]
"""
import argparse, contextlib, csv, json, os, statistics, sys, tempfile
import torch
import torch.nn as nn
from torch.profiler import profile, ProfilerActivity, record_function

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fsdp"))
import sac_probe as sp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--mbs", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    dim, heads, kv, ffn = 4096, 32, 8, 14336
    blocks = nn.ModuleList([sp.Block(dim, heads, kv, ffn) for _ in range(a.layers)]).to("cuda", torch.bfloat16)
    freqs = sp.precompute_freqs_cis(dim // heads, a.seq).to("cuda")
    f = open(os.path.join(a.out, "trace.csv"), "w", newline="")
    f.write(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, layers {a.layers} seq {a.seq} mbs {a.mbs}\n")
    w = csv.DictWriter(f, fieldnames=["mode", "pass", "seq_no", "kernel", "dur_us", "op", "input_dims", "input_types"])
    w.writeheader()
    tim = []

    def step(mode, mark):
        x = torch.randn(a.mbs, a.seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        torch.cuda.synchronize()
        s, e, m = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        s.record()
        with record_function("FWD") if mark else contextlib.nullcontext():
            y = sp.run_blocks(blocks, x, freqs, mode)
            loss = y.float().pow(2).mean()
            m.record()
            torch.cuda.synchronize()
        with record_function("BWD") if mark else contextlib.nullcontext():
            loss.backward()
            e.record()
            torch.cuda.synchronize()
        for p in blocks.parameters():
            p.grad = None
        return s.elapsed_time(m), m.elapsed_time(e)

    for mode in ["none", "op", "full"]:
        ts = [step(mode, False) for _ in range(8)][3:]
        tim.append({"mode": mode, "layers": a.layers, "fwd_ms_median": round(statistics.median(t[0] for t in ts), 4),
                    "bwd_ms_median": round(statistics.median(t[1] for t in ts), 4)})
        print(tim[-1], flush=True)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU], record_shapes=True) as prof:
            step(mode, True)
        tmp = tempfile.mktemp(suffix=".json")
        prof.export_chrome_trace(tmp)
        tr = json.load(open(tmp)); os.remove(tmp)
        ev = tr["traceEvents"] if isinstance(tr, dict) else tr
        marks = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in ev
                 if e.get("cat") == "user_annotation" and e.get("name") in ("FWD", "BWD")}
        ops = {}
        for e in ev:
            if e.get("cat") == "cpu_op":
                ar = e.get("args", {})
                eid = ar.get("External id")
                if eid is not None:
                    ops[eid] = (e["name"], e["ts"], json.dumps(ar.get("Input Dims", "")), json.dumps(ar.get("Input type", "")))
        kern = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
        for n, k in enumerate(kern):
            op = ops.get(k.get("args", {}).get("External id"), ("?", k["ts"], "", ""))
            p = next((mk for mk, (t0, t1) in marks.items() if t0 <= op[1] <= t1), "?")
            w.writerow({"mode": mode, "pass": p, "seq_no": n, "kernel": k["name"][:160], "dur_us": round(k["dur"], 2),
                        "op": op[0], "input_dims": op[2], "input_types": op[3]})
        f.flush()
        print(f"{mode}: {len(kern)} kernels", flush=True)
    f.close()
    with open(os.path.join(a.out, "timing.csv"), "w", newline="") as g:
        wt = csv.DictWriter(g, fieldnames=list(tim[0].keys()))
        wt.writeheader()
        wt.writerows(tim)


if __name__ == "__main__":
    main()
