#!/usr/bin/env python3
"""Run 35: whole torchtitan-style FSDP2 steps on one H200 with the embedding, final norm, output head and loss
(issues 17 and 14g): the check of run 34's loss memory and of gradients allocated in the backward inside a step.

Run 25's steps (validation/runs/run25-alloc-trace/alloc_trace.py: N torchtitan Llama-3-8B blocks from
validation/fsdp/sac_probe.py, FSDP2 fully_shard per block and root over a one-rank group, bf16 params / fp32
reduce, reshard_after_forward, AdamW foreach) with what run 25 left out: tokens -> nn.Embedding(128256, 4096) ->
blocks -> RMSNorm -> nn.Linear(4096, 128256) -> the loss, as torchtitan 9dec370's train step runs it
(pred = model(tokens); loss = loss_fn(pred, labels); del pred; loss.backward(); optimizer.step();
optimizer.zero_grad() (set_to_none)). LOSS eager = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0,
1)); compiled = torch.compile of that function (torchtitan since 2025-04 with training.compile). One
configuration per process; 5 steps, the peak counters reset before step 3 (as run 25).
Output: summary.csv (append): loss,mode,layers,seq,mbs,max_alloc_gib,max_reserved_gib,params,seconds,torch
Usage: step_memory.py OUTDIR LOSS MODE LAYERS SEQ MBS
"""
import csv, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fsdp"))
import sac_probe as sp

GIB = 1024 ** 3


class Model(nn.Module):
    def __init__(self, layers, dim, heads, kv, ffn, vocab):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([sp.Block(dim, heads, kv, ffn) for _ in range(layers)])
        self.norm = sp.RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, freqs, mode):
        h = self.tok_embeddings(tokens)
        h = sp.run_blocks(self.layers, h, freqs, mode)
        return self.output(self.norm(h))


def ce(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def main():
    outdir, loss, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    layers, seq, mbs = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29535")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    dim, heads, kv, ffn, vocab = 4096, 32, 8, 14336, 128256
    torch.manual_seed(0)
    model = Model(layers, dim, heads, kv, ffn, vocab).to("cuda", torch.float32)
    freqs = sp.precompute_freqs_cis(dim // heads, seq).to("cuda")
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for b in model.layers:
        fully_shard(b, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True)
    loss_fn = torch.compile(ce) if loss == "compiled" else ce
    tokens = torch.randint(0, vocab, (mbs, seq), device="cuda")
    labels = torch.randint(0, vocab, (mbs, seq), device="cuda")
    t0 = time.time()
    for it in range(5):
        if it == 3:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        pred = model(tokens, freqs, mode)
        out = loss_fn(pred, labels)
        del pred
        out.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del out
        torch.cuda.synchronize()
    a, r = torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB
    n = sum(p.numel() for p in model.parameters())
    path = os.path.join(outdir, "summary.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["loss", "mode", "layers", "seq", "mbs", "max_alloc_gib", "max_reserved_gib", "params", "seconds", "torch"])
        w.writerow([loss, mode, layers, seq, mbs, round(a, 3), round(r, 3), n, round(time.time() - t0, 1), torch.__version__])
    print(loss, mode, layers, seq, mbs, round(a, 3), round(r, 3), n, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
