#!/usr/bin/env python3
"""Run 24: what the CUDA caching allocator reserves beyond what is allocated, for torchtitan-style FSDP2
training steps on one GPU (issue 17: torchtitan's published "Memory(GiB)" is max_reserved, the simulator's
peak is allocated bytes).

Model: N blocks of validation/fsdp/sac_probe.py's torchtitan Llama block (Llama-3-8B dims), fp32 parameters
sharded by FSDP2 `fully_shard` per block and at the root over a one-rank NCCL group (world size 1: the
all-gathers are copies, the allocation pattern - unsharded bf16 parameters gathered on FSDP's stream, freed
after the block, gradients reduce-scattered - is FSDP2's), MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32), reshard_after_forward=True, AdamW (foreach). Per AC mode (none, full, op) and sequence:
3 warm-up steps, then peak stats reset and 2 measured steps: max_memory_allocated, max_memory_reserved,
and the allocator's counters. Control: the same blocks in bf16 without FSDP (plain autograd, no optimizer).
Output CSV: config,mode,layers,seq,mbs,max_alloc_gib,max_reserved_gib,ratio,alloc_retries,segments,
inactive_split_gib,step_ms
Usage: fsdp_memory.py OUT.csv
"""
import csv, os, statistics, sys, time
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fsdp"))
import sac_probe as sp

GIB = 1024 ** 3


class Stack(nn.Module):
    """The blocks behind one forward (FSDP2's root must implement forward; run 24a's first try wrapped a ModuleList)."""
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x, freqs, mode):
        return sp.run_blocks(self.blocks, x, freqs, mode)


def stats():
    s = torch.cuda.memory_stats()
    return (torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB,
            s.get("num_alloc_retries", 0), s.get("segment.all.current", 0), s.get("inactive_split_bytes.all.peak", 0) / GIB)


def run(cfg, mode, layers, seq, mbs, fsdp, rows):
    import torch.distributed as dist
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
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
    times = []
    for it in range(5):
        if it == 3:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        x = torch.randn(mbs, seq, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        t0 = time.time()
        y = model(x, freqs, mode)
        y.float().pow(2).mean().backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)
        else:
            for p in blocks.parameters():
                p.grad = None
        torch.cuda.synchronize()
        times.append((time.time() - t0) * 1e3)
        del x, y
    a, r, retries, segs, inactive = stats()
    rows.append([cfg, mode, layers, seq, mbs, round(a, 3), round(r, 3), round(r / a, 4) if a > 0 else 0, retries, segs,
                 round(inactive, 3), round(statistics.median(times[3:]), 2)])
    print(",".join(str(v) for v in rows[-1]), flush=True)
    del model, blocks, opt
    torch.cuda.empty_cache()


def main():
    out = sys.argv[1]
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    fsdp_ok = True
    try:
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    except Exception as e:
        print("no process group:", str(e).splitlines()[0][:200], file=sys.stderr)
        fsdp_ok = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, FSDP2 {fsdp_ok}", flush=True)
    rows = []
    for (layers, seq, mbs) in ((4, 8192, 1), (4, 8192, 2), (8, 4096, 2)):
        for mode in ("none", "full", "op"):
            for fsdp in ((True, False) if fsdp_ok else (False,)):
                try:
                    run("fsdp2" if fsdp else "plain-bf16", mode, layers, seq, mbs, fsdp, rows)
                except Exception as e:
                    print(f"{'fsdp2' if fsdp else 'plain'} {mode} {layers} {seq} {mbs}: {str(e).splitlines()[0][:200]}",
                          file=sys.stderr, flush=True)
                    torch.cuda.empty_cache()
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "mode", "layers", "seq", "mbs", "max_alloc_gib", "max_reserved_gib", "ratio", "alloc_retries",
                    "segments", "inactive_split_gib", "step_ms"])
        w.writerows(rows)
    if fsdp_ok:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
