"""torchtitan-style Llama blocks on one GPU: forward + backward time per block under
torchtitan's activation-checkpointing modes (none, full, per-op SAC, full every 2nd block),
to check features.recompute = "selective-op" / recompute_every (docs/fsdp.md).

The block follows torchtitan's torchtitan/models/llama/model.py (Dec 2024): RMSNorm computing
in fp32 (x.float() ... type_as), RoPE through complex multiplication (view_as_complex), repeat_kv
for GQA, F.scaled_dot_product_attention(is_causal=True), FeedForward w2(silu(w1 x) * w3 x);
bf16 parameters (FSDP2 MixedPrecisionPolicy param_dtype), no autocast. AC as
torchtitan/parallelisms/parallelize_llama.py: ptd_checkpoint_wrapper (use_reentrant=False)
per block; op SAC with _custom_policy (save mm / SDPA outputs except every second mm).
  python validation/fsdp/sac_probe.py OUT.csv [--layers 4] [--seq 8192] [--mbs 1]
"""
import argparse, csv, statistics, sys
from collections import defaultdict
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts, CheckpointPolicy


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def precompute_freqs_cis(dim, end, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    xk_out = torch.view_as_real(xk_ * fc).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv, n_rep, hd).reshape(bs, slen, n_kv * n_rep, hd)


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.hd, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, dim, bias=False)
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)
        self.attention_norm = RMSNorm(dim)
        self.ffn_norm = RMSNorm(dim)

    def attention(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bs, seqlen, self.h, self.hd)
        xk = xk.view(bs, seqlen, self.kv, self.hd)
        xv = xv.view(bs, seqlen, self.kv, self.hd)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        keys = repeat_kv(xk, self.h // self.kv)
        values = repeat_kv(xv, self.h // self.kv)
        xq, xk, xv = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)
        out = out.transpose(1, 2).contiguous().view(bs, seqlen, -1)
        return self.wo(out)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        n = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(n)) * self.w3(n))


_save_list = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_cudnn_attention.default,
    torch.ops._c10d_functional.reduce_scatter_tensor.default,
    torch.ops.aten.max.default,
}


def op_sac_context():
    meta = defaultdict(int)

    def _custom_policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        key = f"{mode}_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        to_save = func in _save_list and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if to_save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(_custom_policy)


def run_blocks(blocks, x, freqs, mode):
    for i, b in enumerate(blocks):
        if mode == "none" or (mode == "every2" and (i + 1) % 2 != 0):
            x = b(x, freqs)
        elif mode in ("full", "every2"):
            x = checkpoint(b, x, freqs, use_reentrant=False, preserve_rng_state=False)
        elif mode == "op":
            x = checkpoint(b, x, freqs, use_reentrant=False, preserve_rng_state=False, context_fn=op_sac_context)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--mbs", type=int, default=1)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    torch.manual_seed(0)
    dim, heads, kv, ffn = 4096, 32, 8, 14336   # Llama 3 8B (torchtitan llama3 "8B" flavor)
    dev = "cuda"
    blocks = nn.ModuleList([Block(dim, heads, kv, ffn) for _ in range(a.layers)]).to(dev, torch.bfloat16)
    freqs = precompute_freqs_cis(dim // heads, a.seq).to(dev)
    rows = []
    for mode in ["none", "full", "op", "every2"]:
        times, peaks = [], []
        for it in range(3 + a.iters):
            x = torch.randn(a.mbs, a.seq, dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            y = run_blocks(blocks, x, freqs, mode)
            y.float().pow(2).mean().backward()
            e.record()
            torch.cuda.synchronize()
            for p in blocks.parameters():
                p.grad = None
            if it >= 3:
                times.append(s.elapsed_time(e))
                peaks.append((torch.cuda.max_memory_allocated() - base) / 2**30)
        med = statistics.median(times)
        rows.append({"mode": mode, "layers": a.layers, "seq": a.seq, "mbs": a.mbs, "ms_median": round(med, 4),
                     "ms_min": round(min(times), 4), "ms_max": round(max(times), 4),
                     "peak_gib_above_base": round(statistics.median(peaks), 4),
                     "torch": torch.__version__, "gpu": torch.cuda.get_device_name()})
        print(rows[-1], flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
