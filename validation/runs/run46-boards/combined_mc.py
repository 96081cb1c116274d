#!/usr/bin/env python3
"""Run 46: a brute-force Monte Carlo of a job whose boards differ and whose clocks wander, the cross-check of
hardware::job_pace (docs/cost-model.md 2g; tests/hardware/test_board_spread.cpp holds its output).

Model (the one job_pace computes by stratified quantiles and integration, here by plain random draws): N boards,
each a static offset drawn from a normal at SD_BOARD (run 46: 1.07% of the mean); G = N / n synchronous groups of
n boards; every micro-batch each member's time is 1 + its offset + its wander, the wander a normal whose expected
slowest of n is the shipped [slowest_of_n] ratio at n (run 40's table); a micro-batch waits for its group's
slowest member, the step for the slowest group. Per trial the 8 groups with the largest board offsets are
simulated over 256 micro-batches (a group further down cannot catch up: its slowest board is already several
wander sds below); 2,000 trials. Also printed: the boards alone (1 + sd E[max of N normals]), the wander alone
and their product. job_pace waits for the group holding the slowest board; here any group may be the slowest
(one whose top board is a little faster but whose other boards are slower), so this runs 0 to 0.09 points above
it.
Needs numpy (Debian's python3-numpy: /usr/bin/python3 combined_mc.py).
"""
import math
import numpy as np

SD_BOARD = 0.010673094                      # hardware/calibration/h200.toml [board_spread]
TABLE = {2: 1.00709, 4: 1.01363, 8: 1.01933, 16: 1.02411, 32: 1.02815, 64: 1.03184, 128: 1.03549, 256: 1.03925}
rng = np.random.default_rng(46)


def e_max_std(n):
    """E[max of n standard normals] by integration of 1 - Phi(x)^n."""
    xs = np.linspace(-9, 9, 20001)
    phi = 0.5 * np.array([math.erfc(-x / math.sqrt(2)) for x in xs])
    return -9 + np.trapz(1 - phi ** n, xs)


def pace(n, N, trials=2000, top=8, mb=256):
    sw = (TABLE[n] - 1) / e_max_std(n) if n > 1 else 0.0
    G = N // n
    out = np.empty(trials)
    for t in range(trials):
        s = SD_BOARD * rng.standard_normal((G, n))
        idx = np.argsort(s.max(axis=1))[-min(G, top):]
        best = -1.0
        for g in idx:
            w = sw * rng.standard_normal((mb, n))
            best = max(best, (s[g] + w).max(axis=1).mean())
        out[t] = 1 + best
    return out.mean(), out.std() / math.sqrt(trials)


if __name__ == "__main__":
    pairs = [(8, 8), (8, 64), (8, 1024), (32, 1024), (64, 2048), (64, 16384), (128, 1024), (4, 16), (4, 2048),
             (2, 128), (16, 512)]
    for n, N in pairs:
        boards = 1 + SD_BOARD * e_max_std(N)
        p, se = pace(n, N)
        print(f"n {n:4d} N {N:6d}: boards alone {boards:.4f}  wander {TABLE[n]:.4f}  product {boards * TABLE[n]:.4f}  "
              f"Monte Carlo {p:.4f} +- {se:.4f}")
