#!/usr/bin/env python3
"""Real training steps of decoder-only LLMs on one GPU, timed with CUDA events.

Model: Llama-style decoder (pre-norm RMSNorm, RoPE, GQA attention, SwiGLU MLP,
untied embedding / LM head, no biases), next-token cross-entropy, AdamW.
Precision: torch.autocast(bfloat16) over fp32 parameters (fp32 master weights,
fp32 grads, fp32 Adam state: 16 bytes/param), AdamW(fused=True).

Levers (each a CSV column):
  flash      1: F.scaled_dot_product_attention forced to the FLASH_ATTENTION backend (enable_gqa)
             0: materialised eager attention: bf16 QK^T matmul, causal mask, fp32 softmax,
                bf16 probs, P@V matmul (the Hugging Face "eager" path; K/V repeated for GQA)
  recompute  1: torch.utils.checkpoint around every decoder layer (full recompute)
  fused      1: F.rms_norm (native fused kernel) + torch.compile(dynamic=True) of the
                SwiGLU activation and RoPE application (elementwise chains fused by Inductor)
             0: eager elementwise chains (x.float().pow(2).mean..., silu(g)*u, rotate_half)
Measured: step_ms = forward + backward + optimizer (step + zero_grad), fwd_ms, bwd_ms, opt_ms,
each the median of `steps` timed steps after warm-up; layer_fwd_ms / layer_bwd_ms: one decoder
layer alone on the same input shape (bwd includes the recompute forward when recompute=1);
peak_mem_gib = torch.cuda.max_memory_allocated over the timed steps.
Usage: train_step.py OUT.csv [--budget-s 240] [--quick] [--passes N] [--steps K] [--set main|holdout|holdout2]
  --set holdout: 12 configurations outside the compared 36 (run 11), predicted before they were measured.
  --set holdout2: 12 more outside both (run 44), predicted before they were measured.
  --passes N: every configuration is measured N times, the passes interleaved (pass 1 over all
  configurations, then pass 2, ...), so slow drifts of the machine (clocks, host CPU) spread over
  all configurations instead of biasing some; OUT.csv gets the median over the passes of each
  column (plus passes_ok and step_spread = (max - min) / median of the per-pass step times), and
  OUT.csv with suffix .passes.csv every pass. The one-layer-alone columns come from pass 1.
  --pin CORE: every thread of the process (main, autograd engine, CUDA driver threads; re-applied
  before each measurement to threads created since) is bound to CPU CORE and torch uses 1 intra-op
  thread (run 8: does the host's fast/slow switching disappear?). --compare-free: in every pass,
  the HOST_BOUND configurations are measured a second time right after, with the affinity reset to
  all CPUs (column affinity = all); their medians go to OUT with suffix .free.csv.
  --no-layer-alone: skip the one-decoder-layer-alone timing.
  With --passes > 1 the final CSV also has fwd_spread and bwd_spread (same definition as step_spread).
"""
import csv, gc, math, os, statistics, sys, time, datetime, subprocess
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch.utils.checkpoint import checkpoint

MODELS = {  # name: layers, hidden, ffn, heads, kv_heads, vocab
    "s0.5b": (16, 1536, 4096, 12, 4, 32000),
    "s1.3b": (24, 2048, 5632, 16, 8, 32000),
    "s3b": (26, 3072, 8192, 24, 8, 32000),
    "s7b-8L": (8, 4096, 14336, 32, 8, 128256),  # Llama-3-8B layer shapes, 8 of its 32 layers
}

def swiglu_eager(g, u):
    return F.silu(g) * u

def rope_eager(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin

_compiled = {}
FUSED_IMPL = "F.rms_norm + torch.compile(swiglu, rope)"
GQA_NATIVE = True  # flash SDPA with enable_gqa; False: K/V repeated before the flash call

def fused_fns():
    global FUSED_IMPL
    if not _compiled:
        try:
            sw, ro = torch.compile(swiglu_eager, dynamic=True), torch.compile(rope_eager, dynamic=True)
            a = torch.randn(2, 64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            (sw(a, a).sum() + ro(a, a.detach(), a.detach()).sum()).backward()
            _compiled["swiglu"], _compiled["rope"] = sw, ro
        except Exception as e:
            print("torch.compile unusable, fused = F.rms_norm only:", str(e).splitlines()[0][:200], flush=True)
            FUSED_IMPL = "F.rms_norm only (torch.compile failed)"
            _compiled["swiglu"], _compiled["rope"] = swiglu_eager, rope_eager
    return _compiled["swiglu"], _compiled["rope"]

def check_gqa():
    global GQA_NATIVE
    q = torch.randn(1, 8, 256, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 2, 256, 128, device="cuda", dtype=torch.bfloat16)
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
    except Exception as e:
        print("flash SDPA rejects enable_gqa; repeating K/V:", str(e).splitlines()[0][:200], flush=True)
        GQA_NATIVE = False

class RMSNorm(nn.Module):
    def __init__(self, h, fused, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h)); self.fused = fused; self.eps = eps
    def forward(self, x):
        if self.fused:
            return F.rms_norm(x, (x.shape[-1],), self.weight.to(x.dtype), self.eps)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight.to(x.dtype)

class Layer(nn.Module):
    def __init__(self, h, ffn, heads, kv, flash, fused):
        super().__init__()
        self.h, self.heads, self.kv, self.hd = h, heads, kv, h // heads
        self.flash, self.fused = flash, fused
        self.n1, self.n2 = RMSNorm(h, fused), RMSNorm(h, fused)
        self.qkv = nn.Linear(h, (heads + 2 * kv) * self.hd, bias=False)
        self.o = nn.Linear(heads * self.hd, h, bias=False)
        self.up = nn.Linear(h, 2 * ffn, bias=False)   # gate and up fused in one GEMM
        self.down = nn.Linear(ffn, h, bias=False)
    def attn(self, x, cos, sin):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split([self.heads * self.hd, self.kv * self.hd, self.kv * self.hd], dim=-1)
        q = q.view(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.view(b, s, self.kv, self.hd).transpose(1, 2)
        v = v.view(b, s, self.kv, self.hd).transpose(1, 2)
        rope = fused_fns()[1] if self.fused else rope_eager
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if self.flash:
            if not GQA_NATIVE and self.kv != self.heads:
                k, v = k.repeat_interleave(self.heads // self.kv, dim=1), v.repeat_interleave(self.heads // self.kv, dim=1)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=GQA_NATIVE and self.kv != self.heads)
        else:
            rep = self.heads // self.kv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            sc = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.hd))
            mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
            sc = sc.masked_fill(mask, float("-inf"))
            p = torch.softmax(sc.float(), dim=-1).to(q.dtype)
            o = torch.matmul(p, v)
        return self.o(o.transpose(1, 2).reshape(b, s, self.heads * self.hd))
    def forward(self, x, cos, sin):
        x = x + self.attn(self.n1(x), cos, sin)
        g, u = self.up(self.n2(x)).chunk(2, dim=-1)
        act = fused_fns()[0] if self.fused else swiglu_eager
        return x + self.down(act(g, u))

class Model(nn.Module):
    def __init__(self, layers, h, ffn, heads, kv, vocab, flash, fused, recompute):
        super().__init__()
        self.emb = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList([Layer(h, ffn, heads, kv, flash, fused) for _ in range(layers)])
        self.norm = RMSNorm(h, fused)
        self.head = nn.Linear(h, vocab, bias=False)
        self.recompute, self.hd = recompute, h // heads
    def forward(self, tokens, targets, cos, sin):
        x = self.emb(tokens)
        for l in self.layers:
            x = checkpoint(l, x, cos, sin, use_reentrant=False) if self.recompute else l(x, cos, sin)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))

def rope_tables(s, hd, dev):
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=dev).float() / hd))
    f = torch.outer(torch.arange(s, device=dev).float(), inv)
    e = torch.cat((f, f), dim=-1)
    return e.cos().to(torch.bfloat16), e.sin().to(torch.bfloat16)

HOST_BOUND = [  # (model, seq, mbs, flash, recompute, fused): rows whose step waits on the host (run 4 spreads 5-24%)
    ("s0.5b", 4096, 1, 1, 0, 1), ("s1.3b", 4096, 1, 1, 0, 1), ("s1.3b", 2048, 1, 1, 0, 1),
    ("s1.3b", 4096, 1, 1, 1, 1), ("s0.5b", 2048, 1, 0, 0, 1), ("s1.3b", 2048, 1, 0, 0, 1)]

def set_affinity(cpus):
    """Bind every thread of this process to cpus (a set); returns how many threads were set."""
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus); n += 1
        except OSError:
            pass
    return n

def cpu_mhz(core):
    try:
        with open(f"/sys/devices/system/cpu/cpu{core}/cpufreq/scaling_cur_freq") as f:
            return round(int(f.read()) / 1000.0)
    except OSError:
        pass
    try:
        cur = None
        for line in open("/proc/cpuinfo"):
            if line.startswith("processor"):
                cur = int(line.split(":")[1])
            elif line.startswith("cpu MHz") and cur == core:
                return round(float(line.split(":")[1]))
    except OSError:
        pass
    return ""

def ev():
    return torch.cuda.Event(enable_timing=True)

def setup(name, seq, mbs, flash, fused, recompute, layers=None, init_std=None):
    """One training set-up on the GPU, seed 0: the MODELS shape (`layers` instead of its own count if
    given; weight matrices re-drawn from N(0, init_std) if given), fused AdamW, the RoPE tables and random
    tokens / targets of [mbs, seq]. Returns (model, opt, cos, sin, tok, tgt)."""
    L, h, ffn, heads, kv, vocab = MODELS[name]
    if fused:   # compile here, before the seed and outside any checkpointed forward: compiling lazily
        fused_fns()   # inside one makes its recomputation save other tensors (CheckpointError)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Model(layers or L, h, ffn, heads, kv, vocab, flash, fused, recompute)
    if init_std:
        for p in model.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=init_std)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    cos, sin = rope_tables(seq, h // heads, "cuda")
    tok = torch.randint(0, vocab, (mbs, seq), device="cuda")
    tgt = torch.randint(0, vocab, (mbs, seq), device="cuda")
    return model, opt, cos, sin, tok, tgt


def run_config(name, seq, mbs, flash, recompute, fused, steps, layer_alone=True):
    L, h, ffn, heads, kv, vocab = MODELS[name]
    dev = "cuda"
    model, opt, cos, sin, tok, tgt = setup(name, seq, mbs, flash, fused, recompute, init_std=0.02)
    res = []
    torch.cuda.reset_peak_memory_stats()
    for i in range(2 + steps):
        e0, e1, e2, e3 = ev(), ev(), ev(), ev()
        e0.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tok, tgt, cos, sin)
        e1.record()
        loss.backward()
        e2.record()
        opt.step(); opt.zero_grad(set_to_none=True)
        e3.record()
        e3.synchronize()
        if not math.isfinite(loss.item()):
            raise RuntimeError("non-finite loss")
        if i >= 2:
            res.append((e0.elapsed_time(e3), e0.elapsed_time(e1), e1.elapsed_time(e2), e2.elapsed_time(e3)))
    peak = torch.cuda.max_memory_allocated() / 2**30
    med = lambda j: statistics.median(r[j] for r in res)
    nparams = sum(p.numel() for p in model.parameters())
    if not layer_alone:
        del model, opt, loss
        return dict(step_ms=med(0), fwd_ms=med(1), bwd_ms=med(2), opt_ms=med(3),
                    step_ms_min=min(r[0] for r in res), layer_fwd_ms=float("nan"),
                    layer_bwd_ms=float("nan"), peak_mem_gib=peak, params=nparams)
    # one decoder layer alone
    layer = model.layers[0]
    x = torch.randn(mbs, seq, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(mbs, seq, h, device=dev, dtype=torch.bfloat16)
    lf, lb = [], []
    for i in range(5):
        a, b, c = ev(), ev(), ev()
        a.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = checkpoint(layer, x, cos, sin, use_reentrant=False) if recompute else layer(x, cos, sin)
        b.record()
        y.backward(dy)
        c.record(); c.synchronize()
        if i >= 2:
            lf.append(a.elapsed_time(b)); lb.append(b.elapsed_time(c))
        x.grad = None
        model.zero_grad(set_to_none=True)
    del model, opt, x, dy, y, loss
    return dict(step_ms=med(0), fwd_ms=med(1), bwd_ms=med(2), opt_ms=med(3),
                step_ms_min=min(r[0] for r in res), layer_fwd_ms=statistics.median(lf),
                layer_bwd_ms=statistics.median(lb), peak_mem_gib=peak, params=nparams)

def configs(quick, which="main"):
    base = dict(seq=4096, mbs=1, flash=1, recompute=0, fused=1)
    C = []
    add = lambda m, **kw: C.append(dict(base, model=m, **kw))
    if which == "holdout":   # run 11: configurations never measured before, predicted first (runs/run11-holdout/)
        add("s0.5b", recompute=1); add("s1.3b", recompute=1, seq=2048); add("s1.3b", recompute=1, seq=2048, mbs=4)
        add("s3b", recompute=1, seq=8192); add("s7b-8L", recompute=1, seq=8192); add("s1.3b", recompute=1, fused=0)
        add("s0.5b", recompute=1, flash=0, seq=2048)
        add("s0.5b", seq=8192); add("s3b", seq=2048); add("s1.3b", mbs=2); add("s7b-8L", fused=0, seq=2048)
        add("s3b", fused=0, seq=2048, mbs=2)
        return C
    if which == "holdout2":   # run 44: 12 more never measured, predicted first by the model of that day (runs/run44-holdout2/)
        add("s0.5b", mbs=4); add("s0.5b", seq=8192, mbs=2, recompute=1)
        add("s1.3b", seq=8192, mbs=2); add("s1.3b", mbs=4, recompute=1); add("s1.3b", seq=16384, fused=0)
        add("s3b", seq=16384); add("s3b", mbs=4); add("s3b", seq=8192, recompute=1, fused=0)
        add("s7b-8L", mbs=2, recompute=1); add("s7b-8L", seq=8192, mbs=2); add("s7b-8L", seq=2048, mbs=8)
        add("s7b-8L", flash=0)
        return C
    for m in MODELS: add(m)                                               # 1. sizes
    if quick:
        add("s1.3b", flash=0, seq=2048); add("s1.3b", recompute=1); add("s1.3b", fused=0)
        return C
    for mb in (1, 2, 4, 8): add("s1.3b", seq=2048, mbs=mb)                 # 2. micro-batch
    add("s1.3b", flash=0, seq=2048); add("s1.3b", flash=0)                # 3. materialised
    add("s1.3b", recompute=1); add("s7b-8L", recompute=1)                 # 4. recompute
    add("s1.3b", fused=0); add("s7b-8L", fused=0)                         # 5. unfused
    add("s1.3b", seq=8192); add("s1.3b", seq=16384)                       # 6. sequence
    add("s7b-8L", seq=8192); add("s7b-8L", mbs=2)
    add("s7b-8L", flash=0, seq=2048); add("s7b-8L", seq=2048)
    add("s0.5b", flash=0, seq=2048); add("s0.5b", seq=2048); add("s0.5b", flash=0)
    add("s1.3b", flash=0, seq=8192)
    add("s3b", recompute=1); add("s3b", fused=0); add("s0.5b", fused=0)
    add("s1.3b", recompute=1, seq=16384); add("s7b-8L", seq=16384)
    add("s0.5b", seq=16384); add("s3b", mbs=2); add("s3b", seq=8192)
    add("s1.3b", fused=0, seq=2048, mbs=4); add("s1.3b", flash=0, fused=0, seq=2048)
    add("s7b-8L", mbs=4); add("s7b-8L", recompute=1, seq=16384)
    return C

def measure(cfg, steps, layer_alone, affinity=None):
    """affinity: None (leave as is), or (label, set of cpus) applied to every thread first."""
    label = ""
    if affinity is not None:
        label, cpus = affinity
        set_affinity(cpus)
    L, h, ffn, heads, kv, vocab = MODELS[cfg["model"]]
    row = dict(model=cfg["model"], layers=L, hidden=h, ffn=ffn, heads=heads, kv_heads=kv, vocab=vocab,
               head_dim=h // heads, seq=cfg["seq"], mbs=cfg["mbs"], tokens=cfg["seq"] * cfg["mbs"],
               flash=cfg["flash"], recompute=cfg["recompute"], fused=cfg["fused"],
               attn_impl=("sdpa_flash" + ("" if GQA_NATIVE else "_kv_repeated")) if cfg["flash"] else "eager_materialized",
               precision="autocast_bf16_fp32_master", optimizer="AdamW_fused", affinity=label)
    t0 = time.time()
    try:
        r = run_config(cfg["model"], cfg["seq"], cfg["mbs"], cfg["flash"], cfg["recompute"], cfg["fused"], steps,
                       layer_alone)
        row.update({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()})
        row["status"] = "ok"
    except torch.OutOfMemoryError:
        row["status"] = "oom"
    except Exception as e:
        row["status"] = "error:" + str(e).splitlines()[0][:120].replace(",", ";")
    gc.collect(); torch.cuda.empty_cache()
    row["fused_impl"] = FUSED_IMPL if cfg["fused"] else "eager"
    row["wall_s"] = round(time.time() - t0, 1)
    row["threads"] = len(os.listdir("/proc/self/task"))
    if affinity is not None:
        row["cpu_mhz"] = cpu_mhz(min(affinity[1]))
    return row


def finish(row):
    if row.get("status") == "ok":
        L, h = row["layers"], row["hidden"]
        fpt = 6 * row["params"] + 12 * L * row["seq"] * h
        row["model_flops_per_token"] = fpt
        row["achieved_tflops"] = round(fpt * row["tokens"] / (row["step_ms"] * 1e-3) * 1e-12, 2)
        row["mfu_vs_989"] = round(row["achieved_tflops"] / 989.0, 4)
    return row


def main():
    out = sys.argv[1]
    arg = lambda k, d: type(d)(sys.argv[sys.argv.index(k) + 1]) if k in sys.argv else d
    budget = arg("--budget-s", 240.0)
    quick = "--quick" in sys.argv
    passes = arg("--passes", 1)
    steps = arg("--steps", 3)
    pin = arg("--pin", -1)
    compare_free = "--compare-free" in sys.argv
    layer_alone_on = "--no-layer-alone" not in sys.argv
    all_cpus = set(os.sched_getaffinity(0))
    pinned = None
    if pin >= 0:
        torch.set_num_threads(1)
        pinned = (f"cpu{pin}", {pin})
        set_affinity({pin})
    t_start = time.time()
    torch.backends.cuda.matmul.allow_tf32 = True
    check_gqa()
    fused_fns()
    prov = dict(gpu=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(),
                driver=subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                      capture_output=True, text=True).stdout.strip(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                command=" ".join(sys.argv), cpus=len(all_cpus),
                pin=(f"all threads bound to cpu {pin}, torch.set_num_threads(1)" if pin >= 0 else "none"),
                cpu_model=next((l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""))
    fields = ["model", "layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "head_dim", "params", "seq", "mbs",
              "tokens", "flash", "recompute", "fused", "attn_impl", "fused_impl", "precision", "optimizer", "status",
              "step_ms", "fwd_ms", "bwd_ms", "opt_ms", "step_ms_min", "layer_fwd_ms", "layer_bwd_ms",
              "peak_mem_gib", "model_flops_per_token", "achieved_tflops", "mfu_vs_989", "wall_s",
              "affinity", "threads", "cpu_mhz"]
    def header(f, extra=""):
        f.write("# mfusim validation: measured training steps on one GPU (validation/train_step.py)\n")
        for k, v in prov.items():
            f.write(f"# {k}: {v}\n")
        f.write("# precision: torch.autocast bf16 over fp32 params (fp32 master/grads/Adam), AdamW(fused=True); "
                f"untied embedding/head; steps timed = {steps} after 2 warm-up; times are medians in ms{extra}\n"
                "# model_flops_per_token = 6*params + 12*layers*seq*hidden (SPEC.md mfu_attn convention, causal not halved); "
                "achieved_tflops = model_flops_per_token*tokens/step; mfu_vs_989 uses the 989 TFLOP/s bf16 datasheet peak\n"
                "# status: ok | oom | error:<msg> | skipped_budget\n")
    cfgs = configs(quick, arg("--set", "main"))
    per = [[] for _ in cfgs]   # rows of each configuration, one per pass
    free = [[] for _ in cfgs]  # --compare-free: the same, affinity reset to all CPUs
    key = lambda c: (c["model"], c["seq"], c["mbs"], c["flash"], c["recompute"], c["fused"])
    pf = None
    if passes > 1:
        pf = open(out[:-4] + ".passes.csv" if out.endswith(".csv") else out + ".passes.csv", "w", newline="")
        header(pf, "; one row per configuration and pass (column pass)")
        pw = csv.DictWriter(pf, fieldnames=["pass"] + fields)
        pw.writeheader(); pf.flush()
    for p in range(passes):
        for i, cfg in enumerate(cfgs):
            if time.time() - t_start > budget:
                break
            if p > 0 and per[i] and per[i][0]["status"] == "oom":
                continue
            both = compare_free and pinned and key(cfg) in HOST_BOUND
            def free_run():
                fr = finish(measure(cfg, steps, layer_alone=False, affinity=("all", all_cpus)))
                free[i].append(fr)
                if pf:
                    pw.writerow(dict(fr, **{"pass": p + 1})); pf.flush()
                print(f"[{p+1}] {'(free)':7s} step={fr.get('step_ms','')} fwd={fr.get('fwd_ms','')} bwd={fr.get('bwd_ms','')}",
                      flush=True)
            if both and p % 2 == 1:   # alternate the order: free first on even-numbered passes
                free_run()
            row = finish(measure(cfg, steps, layer_alone=(p == 0 and layer_alone_on), affinity=pinned))
            per[i].append(row)
            if pf:
                pw.writerow(dict(row, **{"pass": p + 1})); pf.flush()
            if both and p % 2 == 0:
                free_run()
            print(f"[{p+1}] {row['model']:7s} seq={row['seq']:5d} mbs={row['mbs']} flash={row['flash']} rc={row['recompute']} "
                  f"fused={row['fused']} {row['status']:8s} step={row.get('step_ms','')} fwd={row.get('fwd_ms','')} "
                  f"bwd={row.get('bwd_ms','')} opt={row.get('opt_ms','')} mem={row.get('peak_mem_gib','')} "
                  f"wall={row['wall_s']}", flush=True)
    if pf:
        pf.close()
    def write_final(path, groups, extra_note=""):
        f = open(path, "w", newline="")
        header(f, (f"; {passes} interleaved passes: each time column is the median over the passes "
                  "(passes_ok), step_spread / fwd_spread / bwd_spread = (max - min) / median of the per-pass times"
                   if passes > 1 else "") + extra_note)
        w = csv.DictWriter(f, fieldnames=fields + (["passes_ok", "step_spread", "fwd_spread", "bwd_spread"] if passes > 1 else []))
        w.writeheader()
        for cfg, rows in zip(cfgs, groups):
            if not rows:
                continue
            ok = [r for r in rows if r["status"] == "ok"]
            row = dict(rows[0])
            if ok:
                row = dict(ok[0])
                for k in ("step_ms", "fwd_ms", "bwd_ms", "opt_ms", "peak_mem_gib"):
                    row[k] = round(statistics.median(r[k] for r in ok), 4)
                row["step_ms_min"] = min(r["step_ms_min"] for r in ok)
                row["wall_s"] = round(sum(r["wall_s"] for r in rows), 1)
                finish(row)
            if passes > 1:
                row["passes_ok"] = len(ok)
                if ok:
                    for k, c in (("step_ms", "step_spread"), ("fwd_ms", "fwd_spread"), ("bwd_ms", "bwd_spread")):
                        st = [r[k] for r in ok]
                        row[c] = round((max(st) - min(st)) / statistics.median(st), 4)
            w.writerow(row)
        f.close()
    for i, cfg in enumerate(cfgs):
        if not per[i]:
            L, h, ffn, heads, kv, vocab = MODELS[cfg["model"]]
            per[i] = [dict(model=cfg["model"], layers=L, hidden=h, ffn=ffn, heads=heads, kv_heads=kv, vocab=vocab,
                           head_dim=h // heads, seq=cfg["seq"], mbs=cfg["mbs"], tokens=cfg["seq"] * cfg["mbs"],
                           flash=cfg["flash"], recompute=cfg["recompute"], fused=cfg["fused"], status="skipped_budget")]
    write_final(out, per)
    if any(free):
        write_final(out[:-4] + ".free.csv" if out.endswith(".csv") else out + ".free.csv", free,
                    "; affinity reset to all CPUs (measured right after the pinned run of the same configuration)")


if __name__ == "__main__":
    main()
