#!/usr/bin/env python3
"""Every GPU kernel of one training step, with the aten op that launched it and that op's input
shapes and dtypes (torch.profiler, record_shapes), for a few configurations of train_step.py.

Why (run 8, issue #6): the GPU-bound rows s1.3b seq 2048 mbs 8 and the fused-0 rows of s1.3b /
s0.5b run 13-15% slower than the model predicts; the model lists 24-52 kernels per layer backward
where the real run launches 45-89. This lists them, kernel by kernel, so each can be matched to the
model's kernel list (models/layer_kernels) and its bytes counted from the shapes.

For each configuration: build the model exactly as train_step.py does, 2 warm-up steps, then one
profiled step; the step synchronises after the forward and after the backward (so each pass's
kernels are its own) and marks the passes with record_function FWD / BWD / OPT. The kernel's pass
is the marker range holding the CPU timestamp of the op that launched it (autograd-thread ops
included: the markers are compared by time, not by thread).
Writes OUT.csv: config,pass,seq_no,kernel,dur_us,gap_us,op,input_dims,input_types (gap_us: idle GPU
time before the kernel since the previous kernel ended).
Usage: kernel_trace.py OUT.csv
"""
import contextlib, csv, json, os, sys, tempfile
import torch
from torch.profiler import profile, ProfilerActivity, record_function

sys.path.insert(0, os.path.dirname(__file__))
import train_step as ts

CONFIGS = [  # name, seq, mbs, flash, recompute, fused
    ("s1.3b", 4096, 1, 1, 0, 1), ("s1.3b", 4096, 1, 1, 0, 0), ("s0.5b", 4096, 1, 1, 0, 0),
    ("s1.3b", 2048, 8, 1, 0, 1), ("s1.3b", 2048, 4, 1, 0, 0), ("s3b", 4096, 1, 1, 0, 0),
    ("s7b-8L", 4096, 1, 1, 0, 0),
]


def main():
    out = sys.argv[1]
    ts.check_gqa()
    ts.fused_fns()
    torch.backends.cuda.matmul.allow_tf32 = True
    f = open(out, "w", newline="")
    f.write(f"# one profiled training step per configuration (validation/kernel_trace.py), "
            f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}\n")
    w = csv.DictWriter(f, fieldnames=["config", "pass", "seq_no", "kernel", "dur_us", "gap_us", "op",
                                      "input_dims", "input_types"])
    w.writeheader()
    for (name, seq, mbs, flash, rec, fused) in CONFIGS:
        cfg = f"{name} seq={seq} mbs={mbs} flash={flash} recompute={rec} fused={fused}"
        try:
            model, opt, cos, sin, tok, tgt = ts.setup(name, seq, mbs, flash, fused, rec)

            def step(mark):
                with record_function("FWD") if mark else contextlib.nullcontext():
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(tok, tgt, cos, sin)
                    torch.cuda.synchronize()
                with record_function("BWD") if mark else contextlib.nullcontext():
                    loss.backward()
                    torch.cuda.synchronize()
                with record_function("OPT") if mark else contextlib.nullcontext():
                    opt.step(); opt.zero_grad(set_to_none=True)
                    torch.cuda.synchronize()

            for _ in range(2):
                step(False)
            with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU], record_shapes=True) as prof:
                step(True)
            tmp = tempfile.mktemp(suffix=".json")
            prof.export_chrome_trace(tmp)
            tr = json.load(open(tmp)); os.remove(tmp)
            ev = tr["traceEvents"] if isinstance(tr, dict) else tr
            marks = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in ev
                     if e.get("cat") == "user_annotation" and e.get("name") in ("FWD", "BWD", "OPT")}
            ops = {}
            for e in ev:
                if e.get("cat") == "cpu_op":
                    a = e.get("args", {})
                    eid = a.get("External id")
                    if eid is not None:
                        ops[eid] = (e["name"], e["ts"], json.dumps(a.get("Input Dims", "")),
                                    json.dumps(a.get("Input type", "")))
            kern = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
            last_end, n = None, 0
            for k in kern:
                op = ops.get(k.get("args", {}).get("External id"), ("?", k["ts"], "", ""))
                p = next((m for m, (a, b) in marks.items() if a <= op[1] <= b), "?")
                gap = 0.0 if last_end is None else max(0.0, k["ts"] - last_end)
                last_end = k["ts"] + k["dur"] if last_end is None else max(last_end, k["ts"] + k["dur"])
                w.writerow(dict(config=cfg, **{"pass": p}, seq_no=n, kernel=k["name"][:160], dur_us=round(k["dur"], 2),
                                gap_us=round(gap, 2), op=op[0], input_dims=op[2], input_types=op[3]))
                n += 1
            f.flush()
            print(f"{cfg}: {n} kernels, marks {sorted(marks)}", flush=True)
            del model, opt, prof, tr, ev
        except torch.OutOfMemoryError:
            print(f"{cfg}: oom", flush=True)
        torch.cuda.empty_cache()
    f.close()


if __name__ == "__main__":
    main()
