#pragma once
// Lowering a full scenario to a task graph: the schedule's per-rank op lists
// become tasks per layer per micro-batch on each pipeline rank's compute
// stream, with TP collectives, stage-to-stage sends, EP all-to-alls, DP
// gradient buckets, the optimizer step, data loading and GC pauses on their
// own streams. One representative GPU per pipeline rank is simulated (TP, CP
// and DP peers are symmetric); collectives are timed for the whole group.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.h"
#include "schedules/schedule.h"
#include "sim/engine.h"

namespace mfusim::step {

struct LowerOptions {
  // Per-layer tasks (the timeline shows every layer and TP collective) or
  // one task per op where nothing attaches inside it (faster; used by plan).
  bool per_layer = true;
};

// Side information per task that the engine does not need but the report does.
// The blocks a task allocates at its start and frees at its end, where it changes memory by more
// than one block (the head's loss: models::HeadMemory). Their sums are the task's memory_delta (when
// positive) and its freed bytes; the caching allocator replay (step::reserved_peaks) plays the
// blocks one by one.
struct MemBlocks {
  std::vector<std::int64_t> at_start, at_end;
};

struct TaskInfo {
  std::int64_t launch_ns = 0;     // part of the duration that is kernel launch overhead
  double flops = 0;               // hardware FLOPs executed (per GPU)
  int parts = -1;                 // merged op task: index into Lowered::parts
  // What the trace shows (step/task_info.cpp fills them after each op is emitted): the
  // transformer layer of a per-layer task or of its collective (-1: none, the embedding or
  // the head, or a merged op task), the minimum HBM bytes its kernels read and write (per
  // GPU) and its longest-running kernel (layer::Seg::kernel, a string literal; null: none).
  int layer = -1;
  double bytes = 0;
  const char* kernel = nullptr;
  int blocks = -1;   // index into Lowered::mem_blocks; -1: one block (memory_delta / memory_release)
};

// Nominal nanoseconds per category of a merged op task (coarse lowering):
// compute by pass, and the communication waits it absorbed.
using Parts = std::array<std::int64_t, static_cast<std::size_t>(sim::Category::count_)>;

struct Lowered {
  sim::TaskGraph graph;
  schedules::PipelineSchedule schedule;
  int ranks = 1;
  std::vector<sim::StreamId> compute_stream;     // per pipeline rank
  std::vector<TaskInfo> info;                    // per task
  std::vector<MemBlocks> mem_blocks;             // TaskInfo::blocks (the head's forward, backward)
  // zero_grad(set_to_none=True) (the plain PyTorch recipe, PyTorch FSDP): the gradients are not static
  // but allocated by the last compute task of each stage's first gradient-producing op on the rank (the
  // task and its bytes, listed here) and freed by the optimizer step; grads_bytes holds only what stays
  // static (DDP's buckets with data parallelism).
  std::vector<std::pair<sim::TaskId, std::int64_t>> lazy_grads;
  std::vector<Parts> parts;                      // of merged tasks (TaskInfo::parts)
  std::vector<double> static_bytes;              // per rank: params + grads + optimizer
  std::vector<double> params_bytes, grads_bytes, optimizer_bytes;   // per rank
  std::vector<std::vector<int>> stage_layers;    // layers of each virtual stage
  std::vector<std::string> warnings;
  std::map<sim::TaskId, int> send_target;        // stage-to-stage sends: receiving rank
  // Per rank: the bytes its data-parallel collectives carry in one step (step/data_parallel.cpp):
  // gradients reduced over dp x cp and, with ep > 1, routed-expert gradients over the expert-DP
  // group; the distributed optimizer's parameter all-gather likewise (ZeRO-1 only; ZeRO-2/3 and
  // HSDP are step/fsdp.cpp's and leave these at 0).
  std::vector<double> dp_grad_bytes, expert_dp_grad_bytes, dp_gather_bytes, expert_dp_gather_bytes;
  // Per rank, the same for ZeRO-2/3, HSDP and offload (step/fsdp.cpp): the gradient bytes it
  // reduce-scatters over its shard group (each unit's or bucket's unsharded gradient) and the parameter
  // bytes it all-gathers (each gather's gathered bytes), in one step.
  std::vector<double> sharded_grad_bytes, sharded_gather_bytes;
  // Tied embeddings with the two ends on different pipeline ranks: the bytes each of the two ranks
  // all-reduces between the first and the last stage (Megatron's embedding group), 0 otherwise.
  double embedding_allreduce_bytes = 0;
  // Per rank: the bytes of the gradients sequence parallelism leaves partial (the parameters every TP rank
  // holds whole), all-reduced over the TP group after the DP sync (Megatron's finalize_model_grads); 0 without
  // tp > 1 and sequence parallelism, and under PyTorch's FSDP (ZeRO-3 without features.megatron_fsdp), which
  // reduces those gradients inside the backward (not modelled).
  std::vector<double> sp_grad_allreduce_bytes;
  // The ranks a rank waits for every micro-batch (models::sync_group_ranks) and the pace the lowering's
  // kernels ran at for them (hardware::CostModel::sync_pace; 1 without the calibration's [slowest_of_n]).
  int sync_group_ranks = 1;
  double sync_pace = 1.0;
  int job_boards = 0;   // StepResult::job_boards
};

// Layers of each virtual stage (even split, or the scenario's uneven split): models::split_layers.
std::vector<std::vector<int>> split_layers(const config::Scenario&, int stages);

// What a rank holds of the model through some of the virtual stages (`stage_layers`, split_layers'
// split): the stages' layers, concatenated in the order the stages are given (the memory sums add
// them in that order), and whether one of them is the first stage (the embedding) or the last (the
// output head, with the MTP modules), as models::rank_static_memory takes them. The step's static
// memory, its lazily allocated gradients and the planner's memory bound each gather them here.
struct HeldLayers {
  std::vector<int> layers;
  bool embedding = false, head = false;
};
HeldLayers held_layers(const std::vector<std::vector<int>>& stage_layers, const std::vector<int>& stages);

// The scenario's pipeline shape for its schedule: pp, micro-batches, chunks, and Megatron's combined
// 1F1B where moe.overlap_ep_comm asks for it and the schedule has one.
schedules::PipelineShape pipeline_shape(const config::Scenario&);

// Whether moe.overlap_ep_comm (Megatron's combined 1F1B) can run on this layout: an MoE model with
// ep > 1, a schedule that has the combined 1F1B, no full recompute (Megatron-LM's conditions, which
// config/checks.cpp reports one by one); what plan searches and diagnose proposes.
bool overlap_ep_comm_applies(const config::Scenario&);

Lowered lower(const config::Scenario&, const LowerOptions& = {});

}  // namespace mfusim::step
