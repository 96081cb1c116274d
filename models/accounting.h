#pragma once
// Parameter, FLOP and memory accounting of a ModelSpec, and the kernels one
// layer launches per micro-batch on one rank, one quantity per header:
//   models/params.h         parameter counts
//   models/flops.h          FLOPs per layer and pass, model FLOPs per token, recompute
//   models/rank_shape.h     what one rank runs of a layer (RankShape, rank_shape)
//   models/layer_kernels.h  the kernels of a layer, the embedding and the head on one rank
//   models/layer_comm.h     bytes of a layer's collectives on one rank
//   models/memory.h         weights, gradients, optimizer state and activations per rank
// Sources: Narayanan et al. 2021, Korthikanti et al. 2022, Megatron-Core
// num_floating_point_operations, Qi et al. 2024 (../shared/validation/formulas.md);
// adaptations documented in docs/accounting.md.
#include "models/flops.h"
#include "models/layer_comm.h"
#include "models/layer_kernels.h"
#include "models/memory.h"
#include "models/params.h"
#include "models/rank_shape.h"
