#!/usr/bin/env python3
"""Honesty check in one process: the probe's GEMM path and torch.matmul on the SAME buffers.

Why (validation/README.md "GEMM honesty check"): run 6 compared the probe (its own process,
its own buffers and random fill) with torch.matmul (torch's process, torch's buffers) through
the same cuBLASLt kernel and found a ~1.5% median offset, unexplained, with 114/128 bf16
shapes within 3%. This splits the comparison into its parts. Per shape, in this one process
(one CUDA context), the buffers are torch's (x[m,k], w[n,k], y[m,n], sets rotated over >= 4x
L2 as both sides do), and alternating pass by pass (order flipped every pass):
  torch        torch.matmul(x, w.t(), out=y), cuBLASLt backend, 64 MiB workspace, timed by
               gemm_torch.bench_graph (CUDA graph of >= 2 ms of calls, median of 9 replays)
  inproc       the probe's own code on the same buffers: libmfusim_probe.so
               mfusim_probe_gemm_time = make_plan (first heuristic, 64 MiB) + run_plan timed by
               the probe's time_graph (same rule: graph of >= 2 ms, median of 9 replays)
  serve        the probe as in run 6: `probe --serve`, its own process, buffers and fill
then the same buffers are refilled with the probe's random fill (hash_uniform, uniform [-1,1))
and timed again:
  torch_hash   torch.matmul on the probe-filled buffers
  inproc_hash  the probe's code on the probe-filled buffers
Ratios (torch time / other time = other's TFLOP/s over torch's): inproc (same process, same
buffers, same data: only the probe's plan and timing loop differ), serve (run 6's
comparison), hash (torch_hash / torch: the fill's effect on torch), inproc_hash.
Usage: gemm_inproc.py PROBE.toml OUT.csv --probe PROBE_BINARY --lib LIBMFUSIM_PROBE.so
       [--passes N] [--deadline SECONDS]
       gemm_inproc.py PROBE.toml OUT.csv --lib LIBMFUSIM_PROBE.so --ab PAIRS [--dtype bf16|fp8_e4m3]

--ab PAIRS (run 10b): replay-by-replay A/B. The GPU runs power-capped through most of the check
(nvidia-smi clocks_event_reasons 0x4, SW power cap, in 659 of 701 samples of run 10; SM clock
1455-1665 MHz), so two timings taken seconds apart see different clocks. Here each side's batch
is captured once (torch: gemm_torch.bench_graph's rule, >= 2 ms of calls; probe:
mfusim_probe_ab_make, the probe's make_batch on the same buffers) and the two are replayed
alternately PAIRS times (the three batches in all six orders in turn; torch timed with torch's events, the probe
with its own replay_seconds); ratio = median over pairs of torch / probe. Control: a second,
separately captured torch batch replayed in the same alternation (torch / torch2), the method's
own spread.
"""
import ctypes, csv, os, statistics, sys, time, tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_torch as gt  # noqa: E402  (sets the cuBLASLt workspace environment before torch starts)
import torch  # noqa: E402

SIDES = ["torch", "inproc", "serve", "torch_hash", "inproc_hash"]
ORDERS = [("t", "p", "t2"), ("p", "t2", "t"), ("t2", "t", "p"), ("t2", "p", "t"), ("p", "t", "t2"), ("t", "t2", "p")]


def load_probe_lib(libpath):
    """libmfusim_probe.so with its entry points typed, after torch has loaded its cuBLAS (the library links
    libcublasLt.so.13: the one torch loaded is made global first, so both run one cuBLAS build).
    Returns (lib, path of torch's libcublasLt or None)."""
    a = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, a)
    torch.cuda.synchronize()
    lt_lib = gt.loaded_library("libcublasLt.so")
    if lt_lib:
        ctypes.CDLL(lt_lib, mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(libpath)
    P, I, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    for name, res, args in (
            ("mfusim_probe_gemm_time", ctypes.c_double, [I, LL, LL, LL, P, P, P, I, P, ctypes.c_char_p, I]),
            ("mfusim_probe_fill_bf16", None, [P, ctypes.c_ulonglong, ctypes.c_uint, P]),
            ("mfusim_probe_gemm_once", I, [I, LL, LL, LL, P, P, P, P]),
            ("mfusim_probe_ab_make", P, [I, LL, LL, LL, P, P, P, I, P]),
            ("mfusim_probe_ab_replay", ctypes.c_double, [P, P]),
            ("mfusim_probe_ab_inner", I, [P]),
            ("mfusim_probe_ab_free", None, [P])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib, lt_lib


def write_rows(out, head, rows, tag, keys):
    """OUT.csv (head line, one row per shape) and the within-3% summary of each ratio column."""
    with open(out, "w", newline="") as f:
        f.write(head + "\n")
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    long_enough = lambda x: x["torch_s"] >= 15e-6
    for key in keys:
        print(f"gemm {tag} " + gt.summary(rows, key, key))
        print(f"gemm {tag} " + gt.summary(rows, key, f"{key}, one call >= 15 us", long_enough))


def ab_main(probe_toml, out, libpath, npairs, dtype="bf16"):
    """dtype bf16: torch.matmul; fp8_e4m3: torch._scaled_mm (cuBLASLt, per-tensor scales of 1, bf16 out) against
    the probe's fp8 plan on the same fp8 buffers."""
    fp8 = dtype == "fp8_e4m3"
    with open(probe_toml, "rb") as f:
        shapes = [(g["label"], g["m"], g["n"], g["k"]) for g in tomllib.load(f).get("gemm", []) if g["dtype"] == dtype]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    torch.backends.cuda.preferred_blas_library("cublaslt")
    lib, lt_lib = load_probe_lib(libpath)
    stream = torch.cuda.Stream()
    sh = ctypes.c_void_p(stream.cuda_stream)
    head = (f"# probe vs torch.matmul replay by replay in one process on the same buffers (validation/gemm_inproc.py "
            f"--ab {npairs}); {torch.cuda.get_device_name(0)}, torch {torch.__version__} (cuda {torch.version.cuda}); "
            f"torch libcublasLt {lt_lib}; CUBLASLT_WORKSPACE_SIZE={os.environ['CUBLASLT_WORKSPACE_SIZE']} KiB; "
            f"ab = median over pairs of torch_s / probe_s (probe TFLOP/s over torch's); aa = the same for two torch "
            f"batches (control); {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(head, flush=True)
    rows, t0 = [], time.time()
    for i, (label, m, n, k) in enumerate(shapes):
        sets, xs, ws, cs = gt.gemm_buffers(m, n, k, l2, 1 if fp8 else 2)
        if fp8:   # [-1, 1) rounded to e4m3 (the probe's own fp8 fill is [-2, 2): the same kind of values)
            xs = [x.to(torch.float8_e4m3fn) for x in xs]
            ws = [w.to(torch.float8_e4m3fn) for w in ws]
            one = torch.ones((), device="cuda", dtype=torch.float32)
            fn = lambda j: torch._scaled_mm(xs[j], ws[j].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=cs[j])
        else:
            fn = lambda j: torch.matmul(xs[j], ws[j].t(), out=cs[j])
        ptrs = lambda ts: ctypes.cast((ctypes.c_void_p * sets)(*[t.data_ptr() for t in ts]), ctypes.c_void_p)
        torch.cuda.synchronize()
        pb = lib.mfusim_probe_ab_make(1 if fp8 else 0, m, n, k, ptrs(xs), ptrs(ws), ptrs(cs), sets, sh)
        if not pb:
            print(f"{label[:28]:28s} {m} {n} {k}: the probe's cuBLASLt has no algorithm; skipped", flush=True)
            continue
        stream.synchronize()
        tb, tb2 = gt.graph_batch(fn, sets), gt.graph_batch(fn, sets)
        t, p, t2 = [], [], []
        for r in range(npairs):
            for side in ORDERS[r % len(ORDERS)]:
                if side == "p":
                    p.append(lib.mfusim_probe_ab_replay(pb, sh))
                else:
                    (t if side == "t" else t2).append(gt.graph_replay_seconds(tb if side == "t" else tb2))
        inner_p = lib.mfusim_probe_ab_inner(pb)
        lib.mfusim_probe_ab_free(pb)
        del tb, tb2, xs, ws, cs
        torch.cuda.empty_cache()
        r = dict(label=label, dtype=dtype, m=m, n=n, k=k, pairs=npairs, sets=sets, inner_torch=None, inner_probe=inner_p,
                 torch_s=statistics.median(t), probe_s=statistics.median(p), torch2_s=statistics.median(t2),
                 ab=round(statistics.median(x / y for x, y in zip(t, p)), 4),
                 aa=round(statistics.median(x / y for x, y in zip(t, t2)), 4),
                 ab_of_medians=round(statistics.median(t) / statistics.median(p), 4),
                 torch_spread=round((max(t) - min(t)) / statistics.median(t), 4))
        r["inner_torch"] = max(1, min(gt.MAX_INNER, round(gt.TARGET_S / max(r["torch_s"], 1e-9))))
        rows.append(r)
        print(f"{label[:28]:28s} {m:6d} {n:6d} {k:6d} torch {r['torch_s'] * 1e6:9.2f} us probe {r['probe_s'] * 1e6:9.2f} us "
              f"ab {r['ab']:.4f} aa {r['aa']:.4f} spread {r['torch_spread']:.3f}", flush=True)
    write_rows(out, head, rows, "ab", ("ab", "ab_of_medians", "aa"))
    for x in rows:
        if abs(x["ab"] - 1) > 0.03:
            print(f"  outside 3%: {x['label'][:30]} {x['m']}x{x['n']}x{x['k']} ab {x['ab']} aa {x['aa']} "
                  f"torch {x['torch_s'] * 1e6:.2f} us probe {x['probe_s'] * 1e6:.2f} us")
    print(f"gemm ab: {time.time() - t0:.0f} s")


def main():
    probe_toml, out = sys.argv[1], sys.argv[2]
    if "--ab" in sys.argv:
        dt = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "bf16"
        return ab_main(probe_toml, out, sys.argv[sys.argv.index("--lib") + 1], int(sys.argv[sys.argv.index("--ab") + 1]), dt)
    opt = lambda name, d: type(d)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else d
    binary, libpath = opt("--probe", ""), opt("--lib", "")
    passes, deadline = opt("--passes", 5), opt("--deadline", 0.0)
    with open(probe_toml, "rb") as f:
        shapes = [(g["label"], g["m"], g["n"], g["k"]) for g in tomllib.load(f).get("gemm", []) if g["dtype"] == "bf16"]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    lib, lt_lib = load_probe_lib(libpath)
    env = dict(os.environ)
    if lt_lib:
        env["LD_LIBRARY_PATH"] = os.path.dirname(lt_lib) + ":" + env.get("LD_LIBRARY_PATH", "")
    probe = gt.Probe(binary, out + ".probe.toml", False, env)
    stream = torch.cuda.Stream()
    head = (f"# probe vs torch.matmul in one process on the same buffers (validation/gemm_inproc.py); "
            f"{torch.cuda.get_device_name(0)}, torch {torch.__version__} (cuda {torch.version.cuda}); torch "
            f"libcublasLt {lt_lib}; probe {probe.ready}; lib {os.path.basename(libpath)}; CUBLASLT_WORKSPACE_SIZE="
            f"{os.environ['CUBLASLT_WORKSPACE_SIZE']} KiB; ratio_X = torch_s / X_s (X's TFLOP/s over torch's), of "
            f"the medians; paired_X = median over passes of the per-pass ratio; "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(head, flush=True)
    rows, t0, seed = [], time.time(), 777
    torch.backends.cuda.preferred_blas_library("cublaslt")
    for i, (label, m, n, k) in enumerate(shapes):
        npass = passes
        if deadline and i >= 8:
            per_pass = (time.time() - t0) / sum(r["passes"] for r in rows)
            npass = max(3, min(passes, int((deadline - (time.time() - t0)) / per_pass / (len(shapes) - i))))
        sets, xs, ws, cs = gt.gemm_buffers(m, n, k, l2)
        ptrs = lambda ts: (ctypes.c_void_p * sets)(*[t.data_ptr() for t in ts])
        A, B, C = ptrs(xs), ptrs(ws), ptrs(cs)
        fn = lambda j: torch.matmul(xs[j], ws[j].t(), out=cs[j])
        algo = ctypes.create_string_buffer(160)

        def inproc():
            torch.cuda.synchronize()
            with torch.cuda.stream(stream):
                s = lib.mfusim_probe_gemm_time(0, m, n, k, ctypes.cast(A, ctypes.c_void_p), ctypes.cast(B, ctypes.c_void_p),
                                                 ctypes.cast(C, ctypes.c_void_p), sets, ctypes.c_void_p(stream.cuda_stream), algo, 160)
            torch.cuda.synchronize()
            return s

        def hash_fill():
            nonlocal seed
            torch.cuda.synchronize()
            for t in xs + ws:
                lib.mfusim_probe_fill_bf16(t.data_ptr(), t.numel(), seed, ctypes.c_void_p(stream.cuda_stream))
                seed += 1
            stream.synchronize()

        smp = {s: [] for s in SIDES}
        serve_algo = ""
        for p in range(npass):   # torch data first, then the probe's fill, each pass
            if p:
                for t in xs + ws:
                    t.uniform_(-1, 1)
                torch.cuda.synchronize()
            order = ["torch", "inproc", "serve"] if (i + p) % 2 == 0 else ["serve", "inproc", "torch"]
            for s in order:
                if s == "torch":
                    smp[s].append(gt.bench_graph(fn, sets))
                elif s == "inproc":
                    smp[s].append(inproc())
                else:
                    g, _, serve_algo, _ = probe.request(m, n, k, "bf16", "lt", gt.LT_WS_MIB)
                    smp[s].append(g)
            hash_fill()
            for s in (["torch_hash", "inproc_hash"] if (i + p) % 2 == 0 else ["inproc_hash", "torch_hash"]):
                smp[s].append(gt.bench_graph(fn, sets) if s == "torch_hash" else inproc())
        del xs, ws, cs, A, B, C
        torch.cuda.empty_cache()
        med = {s: statistics.median(v) for s, v in smp.items()}
        r = dict(label=label, dtype="bf16", m=m, n=n, k=k, passes=npass, sets=sets)
        for s in SIDES:
            r[f"{s}_s"] = med[s]
        r["ratio_inproc"] = round(med["torch"] / med["inproc"], 4)
        r["ratio_serve"] = round(med["torch"] / med["serve"], 4)
        r["ratio_hash_torch"] = round(med["torch"] / med["torch_hash"], 4)   # > 1: torch faster on the probe's fill
        r["ratio_inproc_hash"] = round(med["torch_hash"] / med["inproc_hash"], 4)
        r["paired_inproc"] = gt.paired_ratio(smp["inproc"], smp["torch"])
        r["paired_serve"] = gt.paired_ratio(smp["serve"], smp["torch"])
        r["inproc_algo"], r["serve_algo"] = algo.value.decode(), serve_algo
        for s in SIDES:
            r[f"{s}_samples_us"] = ";".join(f"{x * 1e6:.2f}" for x in smp[s])
        rows.append(r)
        print(f"{label[:28]:28s} {m:6d} {n:6d} {k:6d} x{npass} torch {med['torch'] * 1e6:9.2f} us | inproc "
              f"{r['ratio_inproc']:.4f} serve {r['ratio_serve']:.4f} hash(torch) {r['ratio_hash_torch']:.4f} "
              f"inproc_hash {r['ratio_inproc_hash']:.4f}{'' if r['inproc_algo'] == serve_algo else ' ALGO DIFFERS'}",
              flush=True)
    probe.close()
    write_rows(out, head, rows, "inproc", ("ratio_inproc", "paired_inproc", "ratio_serve", "paired_serve",
                                           "ratio_hash_torch", "ratio_inproc_hash"))
    print(f"gemm inproc: algorithms equal in {sum(1 for r in rows if r['inproc_algo'] == r['serve_algo'])}/{len(rows)}; "
          f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
