#!/usr/bin/env python3
"""Run 37: where run 36's torchtitan step spends its time on one H200: one step, after 3 warm-up steps, under
torch.profiler (CUDA kernels, copies and memsets with their streams and times), with each phase marked
(forward, loss, backward, optimizer). The model, FSDP2 wrapping, compile, AC and float8 are run 36's
(validation/runs/run36-tt-step-time/step_time.py, imported). One configuration per process.
Output (OUTDIR): kernels-<prec>-<compile>-<mode>-<layers>.csv.gz, one line per GPU activity:
  kind,name,stream,start_us,dur_us  (kind: kernel | memcpy | memset | phase; start relative to the step's first
  activity; phase lines are the gpu_user_annotation ranges forward, loss, backward, optimizer)
and steps.csv (append): prec,compile,mode,layers,seq,mbs,step_ms (CUDA events, the profiled step), torch
Usage: profile_step.py OUTDIR PREC COMPILE MODE LAYERS SEQ MBS
"""
import csv, gzip, json, os, sys, tempfile
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "run36-tt-step-time"))
import step_time as st   # noqa: E402  (also puts validation/fsdp on the path)
sp = st.sp


def main():
    outdir, prec, comp, mode = sys.argv[1], sys.argv[2], sys.argv[3] == "on", sys.argv[4]
    layers, seq, mbs = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    from torch.nn.attention import sdpa_kernel, SDPBackend
    from torch.profiler import profile, ProfilerActivity, record_function
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29537")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch._dynamo.config.cache_size_limit = 64
    dim, heads, kv, ffn, vocab = 4096, 32, 8, 14336, 128256
    torch.manual_seed(0)
    model = st.Model(layers, dim, heads, kv, ffn, vocab, mode, prec == "fp8").to("cuda", torch.float32)
    if comp:
        for i, layer in enumerate(model.layers):
            model.layers[i] = torch.compile(layer, fullgraph=True)
    freqs = sp.precompute_freqs_cis(dim // heads, seq).to("cuda")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    loss_fn = torch.compile(st.ce) if comp else st.ce
    tokens = torch.randint(0, vocab, (mbs, seq), device="cuda")
    labels = torch.randint(0, vocab, (mbs, seq), device="cuda")

    def step(marks):
        with record_function("forward") if marks else _null():
            pred = model(tokens, freqs)
        with record_function("loss") if marks else _null():
            out = loss_fn(pred, labels)
            del pred
        with record_function("backward") if marks else _null():
            out.backward()
        with record_function("optimizer") if marks else _null():
            opt.step()
            opt.zero_grad(set_to_none=True)

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for _ in range(3):
            step(False)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            s.record()
            step(True)
            e.record()
            torch.cuda.synchronize()
    ms = s.elapsed_time(e)
    tmp = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(tmp)
    ev = json.load(open(tmp)).get("traceEvents", [])
    os.remove(tmp)
    keep = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "gpu_user_annotation": "phase"}
    rows = [(keep[x["cat"]], x.get("name", ""), x.get("tid", ""), float(x["ts"]), float(x.get("dur", 0)))
            for x in ev if x.get("ph") == "X" and x.get("cat") in keep]
    t0 = min(r[3] for r in rows if r[0] != "phase")
    tag = f"{prec}-{'on' if comp else 'off'}-{mode}-{layers}"
    with gzip.open(os.path.join(outdir, f"kernels-{tag}.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "name", "stream", "start_us", "dur_us"])
        for r in sorted(rows, key=lambda r: r[3]):
            w.writerow([r[0], r[1], r[2], round(r[3] - t0, 3), round(r[4], 3)])
    path = os.path.join(outdir, "steps.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["prec", "compile", "mode", "layers", "seq", "mbs", "step_ms", "torch"])
        w.writerow([prec, "on" if comp else "off", mode, layers, seq, mbs, round(ms, 2), torch.__version__])
    print(tag, round(ms, 2), len(rows), "activities", flush=True)
    dist.destroy_process_group()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main()
