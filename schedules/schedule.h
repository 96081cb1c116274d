#pragma once
// The op vocabulary of pipeline schedules and one generator per schedule.
// A schedule is data: one ordered list of ops per pipeline rank (the order the
// rank's compute stream runs them). Communication and times are added later
// by the step builder (step/lower.h).
#include <string>
#include <vector>

namespace mfusim::schedules {

// F forward; B backward for inputs (or the whole backward when the schedule
// does not split W); W backward for weights; FB one forward and one backward
// of different micro-batches overlapped (DualPipe's F&B).
enum class OpKind { F, B, W, FB };

// `stage` is the virtual stage: the index of the layer slice in the model's
// forward order, 0 .. stages-1 (stages = ranks * chunks for interleaved and
// V shapes). F of (microbatch, stage) needs F of (microbatch, stage-1); B of
// (microbatch, stage) needs B of (microbatch, stage+1), or F of the last
// stage; W needs B of the same (microbatch, stage). `chunk` is which of the
// rank's model chunks (parameter copies) runs it, for labels and memory.
// For FB the forward half is (microbatch, stage, chunk) and the backward half
// is (microbatch_b, stage_b, chunk_b).
struct Op {
  OpKind kind = OpKind::F;
  int stage = 0;
  int microbatch = 0;
  int chunk = 0;
  int microbatch_b = -1, stage_b = -1, chunk_b = -1;
  bool split_w = false;    // B is input-gradient only (a W op follows)
  friend bool operator==(const Op&, const Op&) = default;
};

using StageOrder = std::vector<std::vector<Op>>;   // one ordered list per pipeline rank

struct PipelineShape {
  int ranks = 1;          // pipeline ranks (parallel.pp)
  int microbatches = 1;   // per pipeline per step
  int chunks = 1;         // vpp for interleaved; ignored by fixed-shape schedules
  // Megatron's combined 1F1B (overlap_moe_expert_parallel_comm, megatron/core/pipeline_parallel/
  // combined_1f1b.py): one more warm-up forward, then each steady-state forward and backward of
  // different micro-batches run as one FB op whose EP all-to-alls hide under each other's
  // compute. interleaved-1f1b, and 1f1b without a pipeline (pp = 1); combined_1f1b_applies.
  bool combined_1f1b = false;
};

// Whether Megatron's combined 1F1B exists for this schedule: interleaved-1f1b, or 1f1b at pp = 1
// (Megatron asserts a virtual pipeline whenever pp > 1).
bool combined_1f1b_applies(const std::string& name, int pp);

// A generated schedule plus what the lowering needs to route it.
struct PipelineSchedule {
  StageOrder order;
  int stages = 1;                 // virtual stages (layer slices)
  int chunks_per_rank = 1;        // model chunks resident per rank
  int param_copies = 1;           // 2 for DualPipe (each rank holds stage r and p-1-r)
  bool split_w = false;           // backward split into B and W
  std::string name;
};

std::string label(const Op&);     // "F mb3 chunk1", "B mb0 chunk0", "F mb3 chunk0 + B mb1 chunk1"

// Each generator cites its source and labels its phases; preconditions are
// asserted with the values in the message (config/ reports them as user errors first).
PipelineSchedule gpipe(const PipelineShape&);
PipelineSchedule one_f_one_b(const PipelineShape&);
PipelineSchedule interleaved_1f1b(const PipelineShape&);
PipelineSchedule zb_h1(const PipelineShape&);
PipelineSchedule zb_h2(const PipelineShape&);
PipelineSchedule zb_v(const PipelineShape&);
PipelineSchedule dualpipe(const PipelineShape&);
PipelineSchedule dualpipev(const PipelineShape&);
PipelineSchedule v_half(const PipelineShape&);   // schedules/v_shape.cpp
PipelineSchedule v_min(const PipelineShape&);

// Per-rank op costs for the schedules planned from costs (zb-auto); any one time unit. Empty f, b and w
// mean unit costs (F = B = W = 1).
struct StageCosts {
  std::vector<double> f, b, w;   // one entry per pipeline rank
  double comm = 0;               // stage-to-stage transfer, as a latency
  int max_inflight = 0;          // memory limit in micro-batch activations M_B; 0 = pp (1F1B's peak)
  // Share of a micro-batch's activations held from its B to its W (F adds 1, B frees 1 - this, W frees
  // this). 1: the limit counts micro-batches between F start and W end.
  double w_memory_fraction = 1.0;
  // Per rank: one micro-batch's activations relative to rank 0's (empty: all equal), and what the rank
  // holds whatever the schedule (weights, gradients, optimizer state) in the same unit (empty: none).
  // The limit is one memory for every rank (one GPU's): 1F1B's peak, where rank r holds p - r of its own
  // micro-batches, its activations scaled by max_inflight / p (2 p: ZB-2p); each rank holds as many of
  // its own micro-batches as fit beside its fixed memory, so a rank with heavier activations (the LM
  // head's logits) holds fewer, one lighter than 1F1B's peak rank more.
  std::vector<double> activation;
  std::vector<double> fixed;
};
StageCosts uniform_costs(int ranks, double f, double b, double w, double comm, int max_inflight = 0,
                         double w_memory_fraction = 1.0);
// schedules/zb_auto.cpp: the Zero Bubble heuristic scheduler (Qi et al. 2024 §3.1).
PipelineSchedule zb_auto(const PipelineShape&, const StageCosts& = {});

// schedules/shape_rules.cpp. Shape rules per schedule (even ranks, enough micro-batches, multiples); empty when fine.
// `name` is the SPEC name ("zb-h1"); messages carry the values.
std::vector<std::string> shape_errors(const std::string& name, const PipelineShape&);
// schedules/generate.cpp: dispatch by SPEC name; throws std::invalid_argument
// naming the schedule and the values when shape_errors() is not empty.
PipelineSchedule generate(const std::string& name, const PipelineShape&);
// The same, with the costs a cost-planned schedule (zb-auto) plans from; the others ignore them.
PipelineSchedule generate(const std::string& name, const PipelineShape&, const StageCosts&);
// Generators call this first: throws std::invalid_argument with every shape error of `name`.
void check_shape(const std::string& name, const PipelineShape&);
// Chunks (virtual stages per rank) a schedule uses for a given vpp: interleaved vpp, zb-v/dualpipev/v-half/v-min 2, others 1.
int chunks_for(const std::string& name, int vpp);
// Whether the schedule splits backward into B and W.
bool splits_w(const std::string& name);
const std::vector<std::string>& schedule_names();

}  // namespace mfusim::schedules
