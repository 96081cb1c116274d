#pragma once
// Communication-computation interference: what a communication kernel takes
// from the compute running beside it on the same GPU. A communication kernel
// holds SMs for its whole run (NCCL: one CTA per channel; Transformer
// Engine's userbuffers: the num_sm of the overlapped op) and streams HBM
// (its reads and writes of the buffers it moves). A GEMM beside it runs on
// the SMs left and shares the HBM bandwidth.
//
// The slowdown is measured on one H200 (132 SMs), validation/runs/
// run14-interference (results-14b): large multi-wave GEMMs (Llama-70B TP8
// shapes, fc1/fc2/proj) beside a kernel that holds k SMs ran 1.06-1.11x
// (k = 2), 1.18-1.19x (4), 1.19-1.20x (8), 1.22-1.28x (16), 1.23-1.26x (24),
// 1.32-1.34x (32); with the held SMs also streaming HBM, a further
// 1.00-1.05x up to 0.55 TB/s, 1.08-1.13x at 1.1-1.6 TB/s and 1.20-1.22x at
// 2.0 TB/s. The curves (docs/cost-model.md, "Communication-computation
// interference"):
//   SM term  S(k) = max(1 + a ln(1 + k), 132 / (132 - k)),  a = 0.094
//            (a saturating staircase: the tile schedule of the whole GPU is
//            broken by the first held SMs, then the loss grows slowly, partly
//            hidden by the power-capped clock rising as fewer SMs draw power;
//            never less than the SM share);
//   HBM term H(f) = 1 + 1.2 f^2, f = the side kernel's HBM traffic over the
//            GPU's HBM bandwidth (queueing on a shared memory system);
//   slowdown = S(k) x H(f).
// k is counted on the measured 132-SM part (H100 / H200 SXM); other GPUs use
// the same curve (no measurement of theirs here).
#include "hardware/collectives.h"
#include "hardware/hardware_spec.h"

namespace mfusim::hardware {

// What a communication kernel holds while it runs.
struct CommFootprint {
  int sms = 0;                  // SMs held (CTAs resident for the whole collective)
  double hbm_bytes_per_s = 0;   // HBM traffic it streams (reads + writes)
};

// The SMs of the measured part (H100 / H200 SXM).
constexpr int kMeasuredSms = 132;

// Time multiplier (>= 1) of compute beside a communication kernel (the product
// of the SM and HBM terms above). 1 when the kernel holds nothing.
double compute_slowdown(const CommFootprint&, const HardwareSpec&);
double sm_slowdown(int held_sms);               // S(k)
double hbm_slowdown(double hbm_fraction);       // H(f)

// Each kind of compute kernel has its own sensitivity (runs 14, 26 and 29, the same method and side
// kernels on one H200; docs/cost-model.md 4b):
// * GEMMs: S(k) x H(f) above (run 14).
// * Attention (cuDNN flash forward and backward, DeepSeek-V3's MLA and Llama-70B GQA shapes, run 29):
//   beside k held SMs 0.99-1.03 (k = 8), 1.06-1.09 (16), 1.08-1.11 (20), 1.16-1.18 (32), about half
//   the SM share's loss (the power-capped clock rises as fewer SMs draw power): A(k) = 1 + 0.51 k /
//   (132 - k), within 0.04 of the 16 medians; streaming SMs add the GEMM's H(f) (copy / hold 1.03-1.26).
// * Memory-bound kernels (fp8 cast, copy, transpose, eager 1x128 quantisation, run 26): beside held SMs
//   0.99-1.04 (no SM term); beside streaming SMs 1 + c f (f the side's alone rate over the datasheet
//   bandwidth), where c grows with the kernel's own HBM use u (its achieved rate over the datasheet
//   bandwidth): c = 0.213 + 0.504 u, the least squares over the copy's, cast's and transpose's c (0.687,
//   0.492, 0.295 at u 0.854, 0.667, 0.131; each within 0.06).
double attention_sm_slowdown(int held_sms);     // A(k)
double memory_hbm_coefficient(double own_hbm_use);   // c(u)

// What compute does to a communication kernel beside it, the other way round (runs 14b, 26 and 29:
// the side kernel's own rate was recorded beside each compute kernel and alone;
// validation/comm_beside_compute.py prints them). A kernel that moves data with k SMs (copy k,
// k = 8-32) kept 0.685-0.760 of its alone rate beside the GEMMs (fc1, fc2, proj at Llama-70B
// TP8 shapes, median 0.712 of 20) and 0.667-0.851 beside cuDNN flash attention (median 0.752 of
// 16): 0.719 over the 36. The SM clock says why: alone the side ran at 1980 MHz, beside the
// power-capped GEMM at 1455-1605 MHz (run 14b's clocks): a kernel paced by its SMs' issue runs at
// the clock the compute holds the GPU at. Applied to communication paced by its SMs: DeepEP's
// kernels (a fixed SM budget sized to the links: their published bandwidths are measured alone,
// at the boost clock). NCCL's collectives are not slowed: whether their NVLink and NIC
// bandwidths are paced by their channels' SMs has no measurement here (one GPU). Beside
// memory-bound kernels the side also shared HBM (0.42-0.87, run 26), which a link-bound transfer
// does not; the compute-bound value is used for every kind.
constexpr double kSmPacedCommBesideCompute = 0.719;
// The time multiplier of an SM-paced communication kernel while compute runs beside it.
double sm_paced_comm_slowdown();

// A full-grid memory-bound kernel on a side stream beside compute (run 39, validation/runs/
// run39-side-elementwise, one H200): FSDP1's gradient cast + pre-division and FSDP2's reduce-scatter
// copy-in (14 and 6 bytes per parameter of a 13b / 8B unit) beside GEMMs (MPT-13b and Llama-8B fc1),
// FlashAttention-2 forward + backward and GELU. Unlike a communication kernel it holds no fixed SMs:
// its blocks take SMs as the compute's retire, and the two take turns. Against running both in
// series the pair saved 0.037-0.235 of the side's alone time (median 0.060 of the seven pairs; per
// kind: GEMMs 0.072, attention 0.069, GELU 0.042). Who waits differs by kind (beside GEMMs the side
// stretched 2.38-4.73, median 2.686, the GEMM slowed 1.19-1.68; beside attention and GELU the compute
// slowed 4-7x while the side ran at 1.11-1.22x its alone time), the pair's time does not.
constexpr double kSideElementwiseHidden = 0.060;    // the share of the side's alone time the pair saves
constexpr double kSideElementwiseStretch = 2.686;   // the side's time multiplier beside compute (GEMMs)
// The time multiplier of every kind of compute while such a kernel runs beside it: the one that makes
// the compute's lost time over the side's stretched window, stretch x (1 - 1 / slowdown), the measured
// (1 - hidden) of the side's alone time: 1 / (1 - (1 - hidden) / stretch) = 1.538 (per kind 1.528 GEMMs,
// 1.530 attention, 1.555 GELU: one factor within 0.03).
double side_elementwise_slowdown();

// What one communication kernel does to the compute beside it, per kind of compute kernel.
struct Contention {
  double gemm = 1.0;        // time multiplier of GEMMs (and of anything not classified): S(k) H(f)
  double attention = 1.0;   // of attention kernels: A(k) H(f)
  double hbm = 0.0;         // f, the side's HBM traffic over the GPU's bandwidth (memory-bound: 1 + c(u) f)
  double self = 1.0;        // the kernel's own time multiplier while compute runs beside it (sm_paced_comm_slowdown)
  bool operator==(const Contention&) const = default;
};
Contention contention(const CommFootprint&, const HardwareSpec&);

// NCCL's footprint of one collective or point-to-point exchange over `g`:
// one CTA per channel. Collectives over NVLink run NCCL's Hopper default of 32
// channels (16 searched ring channels x 2 execution channels; NCCL's "32 coll
// channels" at init on H100/H200 nodes; NVIDIA/nccl issues #1041, #1429).
// Over the NIC (a group with one rank per NVLink domain) 2 channels per NIC
// peer (NCCL_NCHANNELS_PER_NET_PEER, typically 2: NVIDIA/nccl #1424, #438).
// Point-to-point (send/recv, all-to-all) over NVLink: 16 CTAs (the grid of
// ncclDevKernel_SendRecv for all_to_all_single, NVIDIA/nccl #1598).
// HBM: a reducing collective reads its own chunk and the received one and
// writes the result (3 accesses per byte on the link); a gather or send/recv
// reads and writes once (2); the rate is the link's achieved bandwidth.
CommFootprint nccl_footprint(Collective, const Group&, const HardwareSpec&, const Calibration* = nullptr);

// Transformer Engine userbuffers (tp_comm_overlap with sequence parallelism),
// NeMo's H100 configuration userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192
// (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py): forward
// reduce-scatters pipelined on num_sm = 24 (attention proj) and 16 (fc2); the
// backward bulk overlaps on 24 (qkv wgrad beside the qkv dgrad reduce-scatter)
// and 4 (fc1 wgrad); the all-gathers are ring exchanges on the copy engines
// (no SM). HBM: the reduce-scatter's traffic (3 accesses per byte) at the
// NVLink rate.
enum class TpOverlapSite { forward_attention, forward_mlp, backward_attention, backward_mlp };
CommFootprint userbuffers_footprint(TpOverlapSite, const HardwareSpec&, const Calibration* = nullptr);

}  // namespace mfusim::hardware
