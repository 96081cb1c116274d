#pragma once
// The GEMM shapes of a scenario or model (--scenario, --model) and of --shapes lists.
#include <map>
#include <string>
#include <vector>

#include "gemm.h"

namespace mfusim::probe {

// A minimal TOML reader for the few keys the probe needs: flat `key = value`
// lines under [table] headers, comments, quoted strings, dotted keys. Enough
// for scenario and model files; the real loader is config/ (toml++).
std::map<std::string, std::string> read_flat_toml(const std::string& path, const std::string& prefix = "");

struct ModelDims {
  long long hidden = 0, ffn = 0, heads = 0, kv_heads = 0, vocab = 0, layers = 0;
  long long seq = 0, mbs = 1, tp = 1;
  bool swiglu = true, sp = false;
  std::string name = "model";
};

ModelDims dims_from_scenario(const std::string& path);
// --model hidden=4096,ffn=14336,heads=32,kv_heads=8,vocab=128256,seq=4096,mbs=1,tp=1
ModelDims dims_from_list(const std::string& spec);
// Per-rank GEMMs of one transformer layer + LM head, for F (forward),
// B (grad of the input: dX = dY W) and W (grad of the weight: dW = dY^T X).
// Tokens per GEMM = micro_batch x seq (with sequence parallelism the GEMMs
// still see all tokens after the all-gather).
std::vector<Shape> scenario_shapes(const ModelDims& d);
// --shapes "label:m,n,k;m,n,k"
std::vector<Shape> parse_shapes(const std::string& spec);

}  // namespace mfusim::probe
