#!/usr/bin/env python3
"""Run 38: llm-foundry's MPT block on one H200, forward + backward per layer at the llm-foundry rows' shapes
(issue 17: those rows run 19-21% faster in the simulator than published; which part is one GPU's block?).

The block as llm-foundry's MPTBlock (llmfoundry/models/layers/blocks.py, attention.py, ffn.py at 5e85bd62d, the
rows' commit): LPLayerNorm (F.layer_norm in the input's bf16 with autocast off, `low_precision_layernorm`),
Wqkv one Linear(d, 3d, bias=False), split, attention, out_proj Linear(d, d), residual add; LPLayerNorm, up_proj
Linear(d, 4d), GELU (exact), down_proj Linear(4d, d), residual add; no biases, no dropout (pdrop 0 in the
pretrain yamls). bf16 parameters (Composer's FSDP mixed precision: bf16 compute). NOT the rows' attention:
they ran llm-foundry's Triton flash attention with an ALiBi bias (attn_impl = triton, triton-pre-mlir), not
runnable here; this run uses SDPA's FlashAttention-2 backend, causal, no bias, so it times everything but
that kernel's own speed. AC "full": torch.utils.checkpoint per block (non-reentrant).

Per shape: L = 2 and 6 blocks, forward + backward of the stack (the gradient of the output given), 3 warm-up
and 10 timed iterations between CUDA events; per layer = (t6 - t2) / 4.
Output: mpt_block.csv (append): shape,d,heads,seq,mbs,ac,layers,ms_median,ms_min,ms_max,torch,gpu
Usage: mpt_block.py OUT.csv SHAPE D HEADS SEQ MBS AC
"""
import csv, os, statistics, sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
from torch.nn.attention import sdpa_kernel, SDPBackend


class LPLayerNorm(nn.LayerNorm):
    def forward(self, x):
        with torch.autocast(device_type="cuda", enabled=False):
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class MPTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.norm_1 = LPLayerNorm(d, bias=False)
        self.Wqkv = nn.Linear(d, 3 * d, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        self.norm_2 = LPLayerNorm(d, bias=False)
        self.up_proj = nn.Linear(d, 4 * d, bias=False)
        self.down_proj = nn.Linear(4 * d, d, bias=False)
        self.act = nn.GELU(approximate="none")

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.Wqkv(self.norm_1(x))
        q, k, v = qkv.chunk(3, dim=2)
        q = q.view(b, s, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, s, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, s, self.h, d // self.h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out_proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down_proj(self.act(self.up_proj(self.norm_2(x))))


def main():
    out, shape = sys.argv[1], sys.argv[2]
    d, heads, seq, mbs, ac = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
    torch.manual_seed(0)
    rows = []
    for layers in (2, 6):
        blocks = nn.ModuleList([MPTBlock(d, heads) for _ in range(layers)]).to("cuda", torch.bfloat16)
        g = torch.randn(mbs, seq, d, device="cuda", dtype=torch.bfloat16)
        times = []
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for it in range(13):
                x = torch.randn(mbs, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                torch.cuda.synchronize()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                y = x
                for blk in blocks:
                    y = checkpoint(blk, y, use_reentrant=False) if ac == "full" else blk(y)
                y.backward(g)
                e.record()
                torch.cuda.synchronize()
                for p in blocks.parameters():
                    p.grad = None
                del y, x
                if it >= 3:
                    times.append(s.elapsed_time(e))
        rows.append([shape, d, heads, seq, mbs, ac, layers, round(statistics.median(times), 3), round(min(times), 3),
                     round(max(times), 3), torch.__version__, torch.cuda.get_device_name()])
        print(*rows[-1], flush=True)
        del blocks, g
        torch.cuda.empty_cache()
    new = not os.path.exists(out)
    with open(out, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["shape", "d", "heads", "seq", "mbs", "ac", "layers", "ms_median", "ms_min", "ms_max", "torch", "gpu"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
