"""Run 33: GEMM power per active SM against the SM clock on one H200, for a power-limit model.

Question: at what SM clock, and so at what GEMM rate, does a Hopper GPU run under a power limit below
the 700 W it was calibrated at (torchtitan's H100s ran at 500 W)? The GPU's settings are not changed:
the load is. cuBLASLt honours torch's SM carve-out (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET), so a GEMM
loop on k = 132 - c SMs draws less power; below the 700 W limit the clock sits at its maximum and the
board power gives P = P_base + k * p(f_max); at the limit the clock falls until P_base + k * p(f) = 700 W.
The pairs (k, f) at the limit trace p(f), the GEMM power per SM at clock f.

Method (one H200, torch, cuBLASLt preferred, random normal bf16 inputs as training has):
  x[8192, 8192] @ w[8192, 8192] looped SECONDS s per carve-out c (k = 132 - c active SMs);
  every call in the second half timed between its own CUDA events (one host synchronisation per 16
  calls). fp8 (torch._scaled_mm, e4m3, tensorwise scales) at four carve-outs. The full-GPU bf16 phase is
  repeated at the end (drift). nvidia-smi is sampled every 100 ms by run.sh; phases written with wall
  times to OUT/power_phases.txt.
Output: OUT/power.csv: case,dtype,carveout,sms,calls,us_median,tflops
usage: python3 power.py OUTDIR [SECONDS]
"""
import csv, statistics, sys, time
import torch

out = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
dev = "cuda"
torch.backends.cuda.preferred_blas_library("cublaslt")
props = torch.cuda.get_device_properties(0)
SMS = props.multi_processor_count
print("device", props.name, "SMs", SMS, "torch", torch.__version__, flush=True)
torch.manual_seed(0)
N = 8192
x = torch.randn(N, N, device=dev, dtype=torch.bfloat16)
w = torch.randn(N, N, device=dev, dtype=torch.bfloat16) * 0.02
y = torch.empty(N, N, device=dev, dtype=torch.bfloat16)
x8 = x.to(torch.float8_e4m3fn)
w8 = (w * 50).to(torch.float8_e4m3fn).t().contiguous().t()   # column-major second operand for _scaled_mm
one = torch.tensor(1.0, device=dev)
FLOP = 2.0 * N * N * N

def bf16(): torch.mm(x, w, out=y)
def fp8(): torch._scaled_mm(x8, w8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

phases, rows = [], []

def run(case, dtype, carve):
    fn = bf16 if dtype == "bf16" else fp8
    torch._C._set_sm_carveout_experimental(carve if carve > 0 else None)
    for _ in range(3): fn()
    torch.cuda.synchronize()
    phases.append((time.time(), case)); print(time.strftime("%H:%M:%S"), case, flush=True)
    t_end = time.time() + SECONDS; t_rec = time.time() + SECONDS / 2
    times = []
    while time.time() < t_end:
        rec = time.time() >= t_rec
        evs = []
        for _ in range(16):
            if rec:
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(); e.record(); evs.append((s, e))
            else:
                fn()
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) * 1e3 for s, e in evs]
    torch._C._set_sm_carveout_experimental(None)
    med = statistics.median(times)
    rows.append([case, dtype, carve, SMS - carve, len(times), f"{med:.1f}", f"{FLOP / med / 1e6:.1f}"])
    print(f"   {dtype} carveout {carve:3d} sms {SMS - carve:3d}: {med:9.1f} us  {FLOP / med / 1e6:7.1f} TFLOP/s", flush=True)
    phases.append((time.time(), "idle")); time.sleep(2)

# A short check that the carve-out reaches the kernel, before any phase (clocks not settled: indicative).
for c in (0, 66):
    torch._C._set_sm_carveout_experimental(c if c else None)
    for _ in range(3): bf16()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5): bf16()
    e.record(); torch.cuda.synchronize()
    print(f"check carveout {c}: {s.elapsed_time(e) * 1e3 / 5:.1f} us per call", flush=True)
    time.sleep(1)
torch._C._set_sm_carveout_experimental(None)

for c in (0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 120):
    run(f"bf16_c{c}", "bf16", c)
for c in (0, 32, 64, 96):
    run(f"fp8_c{c}", "fp8", c)
run("bf16_c0_again", "bf16", 0)

with open(f"{out}/power.csv", "w", newline="") as f:
    wr = csv.writer(f)
    wr.writerow(["case", "dtype", "carveout", "sms", "calls", "us_median", "tflops"])
    wr.writerows(rows)
with open(f"{out}/power_phases.txt", "w") as f:
    for t, n in phases: f.write(f"{t:.3f} {n}\n")
