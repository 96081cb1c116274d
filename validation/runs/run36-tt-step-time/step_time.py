#!/usr/bin/env python3
"""Run 36: the time of whole torchtitan-style FSDP2 training steps on one H200, bf16 and float8 (tensorwise, as
torchao's Float8Linear computes it), eager and torch.compile'd per block, with torchtitan's per-op SAC (issues 17
and 14: the torchtitan H200 rows TT25T-8B-h200-32/64 run 15-17% slower than simulated at 32 and 64 GPUs alike;
this run asks whether one GPU's step already is).

Model and step as run 35 (validation/runs/run35-step-loss-memory/step_memory.py): N torchtitan Llama-3-8B blocks
(validation/fsdp/sac_probe.py), tokens -> Embedding(128256, 4096) -> blocks -> RMSNorm -> Linear(4096, 128256) ->
cross-entropy on the fp32 logits; FSDP2 fully_shard per block and root over a one-rank group, bf16 params / fp32
reduce, reshard_after_forward; AdamW (fused=False, foreach=True); zero_grad(set_to_none=True). As torchtitan
e7c0cae (the rows' commit) parallelizes it: AC wrapper per block (per-op SAC: SDPA and mm outputs saved except
every second mm; _scaled_mm outputs saved), then torch.compile(block, fullgraph=True) per block when COMPILE=on,
and the loss compiled when COMPILE=on (components/loss.py since 2025-04). SDPA forced to the FLASH_ATTENTION
backend (FlashAttention-2: the rows' torch 2.8 default on Hopper).

float8 (PREC=fp8): every block linear (not the output head: torchtitan's float8 converter skips `output`)
through a tensorwise dynamic-scaling matmul as torchao's Float8Linear computes it: input and weight cast to
e4m3 with scale = 448 / amax, out = _scaled_mm(x8, w8^T) in bf16; backward: grad_output cast to e5m2
(57344 / amax), grad_input = _scaled_mm(g8, w8 column-major), grad_weight = _scaled_mm(g8^T, x8 column-major);
the weight's cast recomputed in the backward (force_recompute_fp8_weight_in_bwd). Not torchao's code (not
installed on the device): the same kernels (amax reductions, casts, transposed copies, cuBLASLt fp8 GEMMs).

Timing: 3 warm-up steps (compilation in the first), then 6 steps, each between CUDA events on the default stream
after a synchronize; wall time of each too. One configuration per process.
Output: summary.csv (append): prec,compile,mode,layers,seq,mbs,step_ms_median,step_ms_min,step_ms_max,
  wall_ms_median,max_alloc_gib,params,fullgraph,torch
Usage: step_time.py OUTDIR PREC(bf16|fp8) COMPILE(on|off) MODE(none|op|full) LAYERS SEQ MBS
"""
import csv, os, statistics, sys, time
from collections import defaultdict
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts, CheckpointPolicy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fsdp"))
import sac_probe as sp

GIB = 1024 ** 3
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
E4M3_MAX, E5M2_MAX = torch.finfo(E4M3).max, torch.finfo(E5M2).max


def to_fp8(t, dtype, maxv):
    amax = t.abs().max().float()
    scale = maxv / torch.clamp(amax, min=1e-12)
    return (t.float() * scale).clamp(-maxv, maxv).to(dtype), scale.reciprocal()


class F8MM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x2d, w):
        xq, xs = to_fp8(x2d, E4M3, E4M3_MAX)
        wq, ws = to_fp8(w, E4M3, E4M3_MAX)
        ctx.save_for_backward(xq, xs, w)
        return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)

    @staticmethod
    def backward(ctx, go):
        xq, xs, w = ctx.saved_tensors
        gq, gs = to_fp8(go, E5M2, E5M2_MAX)
        wq, ws = to_fp8(w, E4M3, E4M3_MAX)
        gx = torch._scaled_mm(gq, wq.t().contiguous().t(), scale_a=gs, scale_b=ws, out_dtype=torch.bfloat16)
        gw = torch._scaled_mm(gq.t().contiguous(), xq.t().contiguous().t(), scale_a=gs, scale_b=xs,
                              out_dtype=torch.bfloat16)
        return gx, gw


class Float8Linear(nn.Linear):
    def forward(self, x):
        shape = x.shape
        return F8MM.apply(x.reshape(-1, shape[-1]), self.weight).view(*shape[:-1], self.out_features)


def to_float8(block):
    for name in ("wq", "wk", "wv", "wo", "w1", "w2", "w3"):
        old = getattr(block, name)
        new = Float8Linear(old.in_features, old.out_features, bias=False)
        new.weight = old.weight
        setattr(block, name, new)


_save = sp._save_list | {torch.ops.aten._scaled_mm.default}


def op_sac_context():
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        save = func in _save and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class ACBlock(nn.Module):
    """torchtitan's ptd_checkpoint_wrapper around one block (use_reentrant=False)."""

    def __init__(self, block, mode):
        super().__init__()
        self.block, self.mode = block, mode

    def forward(self, x, freqs):
        if self.mode == "none":
            return self.block(x, freqs)
        kw = {"context_fn": op_sac_context} if self.mode == "op" else {}
        return checkpoint(self.block, x, freqs, use_reentrant=False, preserve_rng_state=False, **kw)


class Model(nn.Module):
    def __init__(self, layers, dim, heads, kv, ffn, vocab, mode, fp8):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        blocks = [sp.Block(dim, heads, kv, ffn) for _ in range(layers)]
        if fp8:
            for b in blocks:
                to_float8(b)
        self.layers = nn.ModuleList([ACBlock(b, mode) for b in blocks])
        self.norm = sp.RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, freqs):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, freqs)
        return self.output(self.norm(h))


def ce(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def main():
    outdir, prec, comp, mode = sys.argv[1], sys.argv[2], sys.argv[3] == "on", sys.argv[4]
    layers, seq, mbs = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    from torch.nn.attention import sdpa_kernel, SDPBackend
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29536")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    torch._dynamo.config.cache_size_limit = 64
    fullgraph = os.environ.get("FULLGRAPH", "1") == "1"   # run.sh retries a failed configuration without it
    dim, heads, kv, ffn, vocab = 4096, 32, 8, 14336, 128256
    torch.manual_seed(0)
    model = Model(layers, dim, heads, kv, ffn, vocab, mode, prec == "fp8").to("cuda", torch.float32)
    if comp:
        for i, layer in enumerate(model.layers):
            model.layers[i] = torch.compile(layer, fullgraph=fullgraph)
    freqs = sp.precompute_freqs_cis(dim // heads, seq).to("cuda")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    loss_fn = torch.compile(ce) if comp else ce
    tokens = torch.randint(0, vocab, (mbs, seq), device="cuda")
    labels = torch.randint(0, vocab, (mbs, seq), device="cuda")
    times, walls = [], []
    t_start = time.time()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for it in range(9):
            torch.cuda.synchronize()
            if it == 3:
                torch.cuda.reset_peak_memory_stats()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            w0 = time.perf_counter()
            s.record()
            pred = model(tokens, freqs)
            out = loss_fn(pred, labels)
            del pred
            out.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            e.record()
            torch.cuda.synchronize()
            w1 = time.perf_counter()
            print(f"step {it}: {s.elapsed_time(e):.1f} ms (loss {out.item():.3f}; {time.time() - t_start:.0f} s)",
                  flush=True)
            del out
            if it >= 3:
                times.append(s.elapsed_time(e))
                walls.append((w1 - w0) * 1e3)
    n = sum(p.numel() for p in model.parameters())
    row = [prec, "on" if comp else "off", mode, layers, seq, mbs, round(statistics.median(times), 2),
           round(min(times), 2), round(max(times), 2), round(statistics.median(walls), 2),
           round(torch.cuda.max_memory_allocated() / GIB, 3), n, int(fullgraph), torch.__version__]
    path = os.path.join(outdir, "summary.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["prec", "compile", "mode", "layers", "seq", "mbs", "step_ms_median", "step_ms_min",
                        "step_ms_max", "wall_ms_median", "max_alloc_gib", "params", "fullgraph", "torch"])
        w.writerow(row)
    print(*row, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
