"""The example of docs/python.md: a pipeline-depth x micro-batch sweep of the
shipped 70B case into a table and a plot (docs/pictures/python-sweep.png).

    PYTHONPATH=build/python python3 docs/python_sweep_plot.py

Needs matplotlib (Debian: python3-matplotlib). Not run by the tests."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import mfusim

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "scenarios", "128xh100_70b.toml")

rows = mfusim.sweep(SCENARIO, vary={"parallel.pp": [2, 4, 8], "training.micro_batch": [1, 2, 4]},
                    set={"features.flash_attention": True})

print(f"{'pp':>3} {'mb':>3} {'step s':>8} {'MFU':>6} {'bubble':>7} {'peak GiB':>9} fits")
for r in rows:
    p = r["point"]
    if "error" in r:
        print(f"{p['parallel.pp']:>3} {p['training.micro_batch']:>3}  infeasible: {r['error']}")
        continue
    print(f"{p['parallel.pp']:>3} {p['training.micro_batch']:>3} {r['step_time_s']:8.2f} {100 * r['mfu']:5.1f}% "
          f"{100 * r['bubble_fraction']:6.1f}% {r['memory']['peak_gib']:9.1f} {'yes' if r['memory']['fits'] else 'NO'}")

fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
for mb in (1, 2, 4):
    pts = [(int(r["point"]["parallel.pp"]), 100 * r["mfu"], r["memory"]["fits"]) for r in rows
           if "error" not in r and r["point"]["training.micro_batch"] == str(mb)]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"micro-batch {mb}")
    for x, y, fits in pts:
        if not fits:
            ax.annotate("does not fit", (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
ax.set_xscale("log", base=2)
ax.set_xticks([2, 4, 8], labels=["2", "4", "8"])
ax.set_xlabel("pipeline depth (pp)")
ax.set_ylabel("MFU (%)")
ax.set_title("Llama-2-70B on 128 x H100 (flash attention on): mfusim.sweep")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
out = os.path.join(HERE, "pictures", "python-sweep.png")
fig.savefig(out)
print("wrote", os.path.relpath(out))
