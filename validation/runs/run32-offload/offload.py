#!/usr/bin/env python3
"""Run 32: the host link activation offloading crosses, and what the offload costs the compute (one H200).

features.activation_offload_layers (docs/cost-model.md 4d) prices each transfer at the hardware profile's
pcie_bandwidth_gbs (one direction; the two directions on their own streams) and charges no slowdown to
the compute beside the copies (copy engines, no SMs). This run measures both, then plays Transformer
Engine's schedule (AsyncDoubleBufferGroupOffloadHandler's layer_window_map and its waits) on a toy
block to see where the wait starts.

A. Bandwidth: pinned host <-> device copies of 1 GiB, D2H alone, H2D alone, both at once (two streams);
   medians of 7 after 2 warm-ups.
B. Compute beside copies: a bf16 GEMM 8192^3 back to back (40 calls per timed region), alone and with
   D2H and H2D copies running on two side streams for the whole region; median of 5 regions each.
C. TE's schedule on a toy block: L = 32 layers, each forward one GEMM [T, 8192] x [8192, 8192] (T = 8192)
   whose output (T x 8192 bf16, 128 MiB) is the layer's saved activation; backward per layer two GEMMs of
   the same shape; the first N layers offloaded (N = 0, 4, 8, 16, 31) with TE's windows and waits
   (offload of group k + 1 issued after layer window[k]'s forward, the compute waiting for group k's
   offload there; reloads in the backward at the windows, all waited for before layer 0). Median of 5
   iterations after 2 warm-ups, time per iteration. The script also prints the no-wait floor
   (the N = 0 time) and the link-bound floor (bytes over the link at A's rates).
Output: OUTDIR/offload.csv (part, case, value, unit) and the log.
usage: python3 offload.py OUTDIR
"""
import csv
import statistics
import sys

import torch

dev = "cuda"
rows = []


def ev():
    return torch.cuda.Event(enable_timing=True)


def median_ms(fn, n=7, warm=2):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = ev(), ev()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def part_a():
    n = 1 << 30
    host = [torch.empty(n, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
    devb = [torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev) for _ in range(2)]
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def d2h():
        host[0].copy_(devb[0], non_blocking=True)

    def h2d():
        devb[1].copy_(host[1], non_blocking=True)

    def both():
        cur = torch.cuda.current_stream()
        s1.wait_stream(cur)
        s2.wait_stream(cur)
        with torch.cuda.stream(s1):
            host[0].copy_(devb[0], non_blocking=True)
        with torch.cuda.stream(s2):
            devb[1].copy_(host[1], non_blocking=True)
        cur.wait_stream(s1)
        cur.wait_stream(s2)

    for name, fn in (("d2h", d2h), ("h2d", h2d), ("both", both)):
        ms = median_ms(fn)
        gbs = n / (ms * 1e-3) / 1e9
        rows.append(("A", name, round(gbs, 2), "GB/s per direction"))
        print(f"A {name:5s} 1 GiB: {ms:8.3f} ms  {gbs:7.2f} GB/s per direction", flush=True)
    return host, devb


def part_b(host, devb):
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device=dev, dtype=torch.bfloat16)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def gemms():
        for _ in range(40):
            torch.mm(a, b, out=c)

    alone = median_ms(gemms, n=5)
    # Beside: time the GEMM region only (events on the compute stream around the GEMMs).
    ts = []
    for i in range(7):
        cur = torch.cuda.current_stream()
        s1.wait_stream(cur)
        s2.wait_stream(cur)
        with torch.cuda.stream(s1):
            for _ in range(3):
                host[0].copy_(devb[0], non_blocking=True)
        with torch.cuda.stream(s2):
            for _ in range(3):
                devb[1].copy_(host[1], non_blocking=True)
        x, y = ev(), ev()
        x.record()
        gemms()
        y.record()
        cur.wait_stream(s1)
        cur.wait_stream(s2)
        torch.cuda.synchronize()
        if i >= 2:
            ts.append(x.elapsed_time(y))
    beside = statistics.median(ts)
    tf = 40 * 2 * 8192**3 / 1e12
    rows.append(("B", "gemm_alone_ms", round(alone, 3), "ms per 40 GEMMs"))
    rows.append(("B", "gemm_beside_copies_ms", round(beside, 3), "ms per 40 GEMMs"))
    rows.append(("B", "slowdown", round(beside / alone, 4), "ratio"))
    print(f"B GEMM 8192^3 x40: alone {alone:.2f} ms ({tf / alone * 1e3:.0f} TFLOP/s), beside D2H+H2D {beside:.2f} ms"
          f" ({tf / beside * 1e3:.0f}), ratio {beside / alone:.4f}", flush=True)


def windows(L, N):
    out, constant = [], 0
    for i in range(N):
        w = (L // N) * (i + 1) - 1
        if i < L % N:
            w += i + 1
            constant = i + 1
        else:
            w += constant
        out.append(w)
    return out


def part_c():
    L, T, H = 32, 8192, 8192
    W = torch.randn(H, H, device=dev, dtype=torch.bfloat16) * 0.01
    x0 = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    acts = [torch.empty(T, H, device=dev, dtype=torch.bfloat16) for _ in range(L)]
    host = [torch.empty(T, H, dtype=torch.bfloat16, pin_memory=True) for _ in range(L)]
    g = torch.empty(T, H, device=dev, dtype=torch.bfloat16)
    gw = torch.empty(H, H, device=dev, dtype=torch.bfloat16)
    d2h_s, h2d_s = torch.cuda.Stream(), torch.cuda.Stream()

    def iteration(N):
        cur = torch.cuda.current_stream()
        win = windows(L, N)
        d2h_ev = {}

        def offload(k):
            d2h_s.wait_stream(cur)
            with torch.cuda.stream(d2h_s):
                host[k].copy_(acts[k], non_blocking=True)
                e = torch.cuda.Event()
                e.record(d2h_s)
            d2h_ev[k] = e

        x = x0
        for i in range(L):
            torch.mm(x, W, out=acts[i])
            x = acts[i]
            if N > 0:
                if i == 0:
                    offload(0)
                for k in range(N):
                    if win[k] == i:
                        cur.wait_event(d2h_ev[k])
                        if k + 1 < N:
                            offload(k + 1)
        # backward
        count = N
        last = None
        for i in reversed(range(L)):
            k = count - 1
            if N > 0 and k >= 0 and win[k] == i:
                if last is not None:
                    cur.wait_event(last)
                h2d_s.wait_stream(cur)
                with torch.cuda.stream(h2d_s):
                    acts[k].copy_(host[k], non_blocking=True)
                    last = torch.cuda.Event()
                    last.record(h2d_s)
                count = k
            if N > 0 and i == 0 and last is not None:
                cur.wait_event(last)
            torch.mm(acts[i], W, out=g)     # dgrad stand-in
            torch.mm(W, W, out=gw)          # wgrad stand-in (same FLOPs as [T,H]x[H,H] at T = H)

    base = None
    for N in (0, 4, 8, 16, 31):
        ms = median_ms(lambda: iteration(N), n=5, warm=2)
        if base is None:
            base = ms
        rows.append(("C", f"N={N}", round(ms, 3), "ms per iteration"))
        print(f"C N={N:2d}: {ms:8.2f} ms  (x{ms / base:.3f} of N=0)", flush=True)


def main():
    out = sys.argv[1]
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    host, devb = part_a()
    part_b(host, devb)
    del host, devb
    torch.cuda.empty_cache()
    part_c()
    with open(f"{out}/offload.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "case", "value", "unit"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
