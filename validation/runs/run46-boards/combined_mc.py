#!/usr/bin/env python3
"""Run 46: a brute-force Monte Carlo of a job whose boards differ (static, sd SS of the mean: run 46) and whose
clocks wander per micro-batch (sd SW: run 40's [slowest_of_n] table, 1.0193 at 8 / 1.0318 at 64, is a normal's
E[max] at 1.36%): G = N / n synchronous groups of n ranks; a group's micro-batch waits for its slowest member
(static x wander); the step waits for the slowest group. Prints, per (n, N), the static part alone, the wander
alone, their product (an overstatement) and the Monte Carlo, as the cross-check of hardware::job_pace
(docs/cost-model.md 2g). Needs numpy (Debian's python3-numpy: /usr/bin/python3 combined_mc.py).
"""
import numpy as np
rng = np.random.default_rng(1)
ss, sw = 0.0107, 0.0136
def job_pace(n, N, trials=40, mb=400):
    G = N // n
    out = []
    for _ in range(trials):
        s = 1 + ss * rng.standard_normal((G, n))
        # per group: E over micro-batches of max_j s_j w_j ; evaluate only the groups with the largest static max (top 20) for speed
        top = np.argsort(s.max(axis=1))[-min(G, 20):]
        best = 0
        for g in top:
            w = 1 + sw * rng.standard_normal((mb, n))
            best = max(best, (s[g] * w).max(axis=1).mean())
        out.append(best)
    return np.mean(out)
def emax(N, trials=200):
    return np.mean([ (1 + ss*rng.standard_normal(N)).max() for _ in range(trials)])
def wmax(n, trials=2000):
    return np.mean((1 + sw*rng.standard_normal((trials, n))).max(axis=1))
for n, N in [(1,8),(8,8),(8,64),(8,1024),(32,1024),(64,2048),(64,16384),(128,1024),(4,16),(4,2048),(2,8),(2,128),(16,512)]:
    S, W = emax(N), wmax(n)
    print(f"n {n:4d} N {N:6d}: static E[max] {S:.4f}  wander {W:.4f}  product {S*W:.4f}  MC {job_pace(n,N):.4f}")
