#!/usr/bin/env python3
"""Run 25: the CUDA caching allocator's own event trace for torchtitan-style FSDP2 steps (issue 17).

Run 24 measured max_reserved / max_allocated 1.02-1.26 for these steps; this run records every allocator
event behind those numbers (torch.cuda.memory._record_memory_history, no stacks), so that an allocator model
can be checked by replaying the recorded allocation requests and comparing its reserved peak with the one
torch reports. One configuration per process (run 24 saw allocator state carry over between configurations in
one process). Same model and steps as run 24 (validation/runs/run24-fsdp-memory/fsdp_memory.py): N torchtitan
Llama-3-8B blocks (validation/fsdp/sac_probe.py), FSDP2 fully_shard per block and root over a one-rank group,
bf16 params / fp32 reduce, reshard_after_forward, AdamW foreach; or (config plain) bf16 blocks, no FSDP, no
optimizer. 5 steps; the peak counters reset after step 3 as in run 24.

Output (OUTDIR): trace-<config>-<mode>-<layers>x<seq>x<mbs>.csv.gz with one line per allocator event:
  idx,step,action,addr,size,stream
  (action: alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap,
   snapshot, oom; step: 0-4, the training step the event belongs to, -1 before the first step)
and summary.csv: config,mode,layers,seq,mbs,max_alloc_gib,max_reserved_gib,ratio,events,dropped,
   alloc_conf,expandable
Usage: alloc_trace.py OUTDIR CONFIG MODE LAYERS SEQ MBS
"""
import csv, gzip, os, sys
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fsdp"))
import sac_probe as sp

GIB = 1024 ** 3


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x, freqs, mode):
        return sp.run_blocks(self.blocks, x, freqs, mode)


def main():
    outdir, cfg, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    layers, seq, mbs = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    fsdp = cfg == "fsdp2"
    if fsdp:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29512")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=2_000_000)
    dim, heads, kv, ffn = 4096, 32, 8, 14336
    torch.manual_seed(0)
    blocks = nn.ModuleList([sp.Block(dim, heads, kv, ffn) for _ in range(layers)])
    freqs = sp.precompute_freqs_cis(dim // heads, seq).to("cuda")
    if fsdp:
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        blocks = blocks.to("cuda", torch.float32)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for b in blocks:
            fully_shard(b, mp_policy=mp, reshard_after_forward=True)
        model = Stack(blocks)
        fully_shard(model, mp_policy=mp, reshard_after_forward=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    else:
        blocks = blocks.to("cuda", torch.bfloat16)
        model = Stack(blocks)
        opt = None
    torch.cuda.synchronize()
    bounds = [len(torch.cuda.memory._snapshot()["device_traces"][0])]
    for it in range(5):
        if it == 3:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        x = torch.randn(mbs, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        y = model(x, freqs, mode)
        y.float().pow(2).mean().backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)
        else:
            for p in blocks.parameters():
                p.grad = None
        del x, y
        torch.cuda.synchronize()
        bounds.append(len(torch.cuda.memory._snapshot()["device_traces"][0]))
    a, r = torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB
    snap = torch.cuda.memory._snapshot()
    trace = snap["device_traces"][0]
    torch.cuda.memory._record_memory_history(enabled=None)
    tag = f"{cfg}-{mode}-{layers}x{seq}x{mbs}"
    with gzip.open(os.path.join(outdir, f"trace-{tag}.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["idx", "step", "action", "addr", "size", "stream"])
        for i, e in enumerate(trace):
            step = -1
            for s in range(5):
                if bounds[s] <= i < bounds[s + 1]:
                    step = s
            w.writerow([i, step, e.get("action"), e.get("addr"), e.get("size"), e.get("stream")])
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    summ = os.path.join(outdir, "summary.csv")
    new = not os.path.exists(summ)
    with open(summ, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["config", "mode", "layers", "seq", "mbs", "max_alloc_gib", "max_reserved_gib", "ratio", "events",
                        "dropped", "alloc_conf", "expandable"])
        w.writerow([cfg, mode, layers, seq, mbs, round(a, 3), round(r, 3), round(r / a, 4), len(trace),
                    1 if len(trace) >= 2_000_000 else 0, conf, "expandable_segments:True" in conf])
    print(tag, round(a, 3), round(r, 3), round(r / a, 4), len(trace), flush=True)
    if fsdp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
