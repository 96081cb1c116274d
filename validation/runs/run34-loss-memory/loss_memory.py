#!/usr/bin/env python3
"""Run 34: the memory of a language-model loss as torchtitan runs it (issues 17 and 14, mechanism g).

One configuration per process (fresh allocator). A bf16 output head (nn.Linear(hidden, vocab), no bias) over
an input x [mbs, seq, hidden] that requires grad, then one of the losses:
  eager_fp32   F.cross_entropy(pred.flatten(0, 1).float(), labels)   (torchtitan 9dec370 train.py, uncompiled)
  eager_bf16   F.cross_entropy(pred.flatten(0, 1), labels)            (no upcast)
  compiled_fp32  torch.compile of eager_fp32's function               (torchtitan e7c0cae components/loss.py
               with training.compile)
  chunked8     eager_fp32 over 8 chunks of the sequence, summed / 8   (torchtitan e23bb707d)
MODE head: pred = head(x); loss = loss_fn(pred, labels); del pred; loss.backward()   (torchtitan's train step)
MODE leaf: pred is a bf16 leaf tensor that requires grad (the loss alone; pred.grad kept)
Three iterations (the first compiles); the third is measured. Memory counters in bytes relative to the
allocated bytes before the head's forward (x, weights and labels allocated, no grads):
  fwd_peak   max allocated during forward + loss
  after_fwd  allocated after the loss (head mode: after del pred)
  bwd_peak   max allocated during backward (counters reset before it), relative to the same base
  after_bwd  allocated after backward (grads held)
and each divided by the logits count (mbs * seq * vocab) as *_bpl. Also max reserved over the iteration.
Usage: loss_memory.py OUTDIR LOSS MODE MBS SEQ HIDDEN VOCAB
"""
import csv, os, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F


def ce(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))


def ce_bf16(pred, labels):
    return F.cross_entropy(pred.flatten(0, 1), labels.flatten(0, 1))


def chunked8(pred, labels):
    total = 0.0
    for p, l in zip(pred.chunk(8, dim=1), labels.chunk(8, dim=1)):
        total = total + ce(p, l)
    return total / 8


def main():
    outdir, loss, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    mbs, seq, hidden, vocab = (int(a) for a in sys.argv[4:8])
    fn = {"eager_fp32": ce, "eager_bf16": ce_bf16, "chunked8": chunked8,
          "compiled_fp32": torch.compile(ce)}[loss]
    torch.manual_seed(0)
    dev = "cuda"
    head = nn.Linear(hidden, vocab, bias=False).to(dev, torch.bfloat16)
    labels = torch.randint(0, vocab, (mbs, seq), device=dev)
    logits = mbs * seq * vocab
    row = None
    t0 = time.time()
    for it in range(3):
        head.weight.grad = None
        x = torch.randn(mbs, seq, hidden, device=dev, dtype=torch.bfloat16, requires_grad=(mode == "head"))
        pred_leaf = None
        if mode == "leaf":
            pred_leaf = (torch.randn(mbs, seq, vocab, device=dev, dtype=torch.bfloat16) * 0.1).requires_grad_()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        if mode == "head":
            base = torch.cuda.memory_allocated()
            pred = head(x)
            out = fn(pred, labels)
            del pred
        else:
            out = fn(pred_leaf, labels)
        torch.cuda.synchronize()
        fwd_peak = torch.cuda.max_memory_allocated() - base
        after_fwd = torch.cuda.memory_allocated() - base
        res_fwd = torch.cuda.max_memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        out.backward()
        torch.cuda.synchronize()
        bwd_peak = torch.cuda.max_memory_allocated() - base
        after_bwd = torch.cuda.memory_allocated() - base
        res = max(res_fwd, torch.cuda.max_memory_reserved())
        row = dict(loss=loss, mode=mode, mbs=mbs, seq=seq, hidden=hidden, vocab=vocab, logits=logits,
                   fwd_peak=fwd_peak, after_fwd=after_fwd, bwd_peak=bwd_peak, after_bwd=after_bwd,
                   max_reserved=res, base=base,
                   fwd_peak_bpl=fwd_peak / logits, after_fwd_bpl=after_fwd / logits,
                   bwd_peak_bpl=bwd_peak / logits, after_bwd_bpl=after_bwd / logits,
                   loss_value=float(out), iteration=it)
        del out, x, pred_leaf
    row["seconds"] = round(time.time() - t0, 1)
    row["torch"] = torch.__version__
    path = os.path.join(outdir, "summary.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row.keys()))
        if new:
            w.writeheader()
        w.writerow(row)
    print(", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
