#pragma once
// Model shapes for the accounting tests, built in C++ (independent of the
// models/*.toml data files). Sources: Hugging Face config.json of each model;
// GPT rows from Narayanan 2021 / Korthikanti 2022 (published.csv).
#include <cstdint>

#include "models/model_spec.h"

namespace mfusim::models::fixtures {

inline ModelSpec dense(const char* name, int layers, std::int64_t hidden, std::int64_t ffn, int heads, int kv_heads,
                       std::int64_t vocab, Activation act, bool tied = false) {
  ModelSpec m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = ffn;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.vocab = vocab;
  m.activation = act;
  m.tied_embeddings = tied;
  return m;
}

inline ModelSpec llama2_7b() { return dense("llama2-7b", 32, 4096, 11008, 32, 32, 32000, Activation::swiglu); }
inline ModelSpec llama2_13b() { return dense("llama2-13b", 40, 5120, 13824, 40, 40, 32000, Activation::swiglu); }
inline ModelSpec llama2_70b() { return dense("llama2-70b", 80, 8192, 28672, 64, 8, 32000, Activation::swiglu); }
inline ModelSpec llama3_8b() { return dense("llama3-8b", 32, 4096, 14336, 32, 8, 128256, Activation::swiglu); }
inline ModelSpec llama3_70b() { return dense("llama3-70b", 80, 8192, 28672, 64, 8, 128256, Activation::swiglu); }
inline ModelSpec llama31_405b() {
  return dense("llama3.1-405b", 126, 16384, 53248, 128, 8, 128256, Activation::swiglu);
}
// GPT-3 175B (Brown et al. 2020): vocab 50257, Megatron pads it to 51200 (tp=8).
inline ModelSpec gpt3_175b(std::int64_t vocab = 50257) {
  return dense("gpt3-175b", 96, 12288, 4 * 12288, 96, 96, vocab, Activation::gelu, true);
}
// Narayanan 2021 Table 1 / Korthikanti 2022 GPT rows: ffn = 4h, MHA, vocab 51200, tied.
inline ModelSpec gpt(const char* name, int layers, std::int64_t hidden, int heads) {
  return dense(name, layers, hidden, 4 * hidden, heads, heads, 51200, Activation::gelu, true);
}
inline ModelSpec gpt_22b() { return gpt("gpt-22b", 48, 6144, 64); }         // KOR22 Table 3
inline ModelSpec gpt_175b() { return gpt("gpt-175b", 96, 12288, 96); }      // KOR22 / NAR21
inline ModelSpec mt_nlg_530b() { return gpt("mt-nlg-530b", 105, 20480, 128); }
inline ModelSpec gpt_1t() { return gpt("gpt-1t", 128, 25600, 160); }
inline ModelSpec gpt_18b() { return gpt("gpt-18.4b", 40, 6144, 48); }       // NAR21-T1-04

inline ModelSpec mixtral_8x7b() {
  ModelSpec m = dense("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, Activation::swiglu);
  m.moe = MoeSpec{8, 2, 14336, 0, 0};
  return m;
}

inline ModelSpec deepseek_v3() {
  ModelSpec m = dense("deepseek-v3", 61, 7168, 18432, 128, 128, 129280, Activation::swiglu);
  m.head_dim = 128;
  m.moe = MoeSpec{256, 8, 2048, 1, 3};
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  return m;
}

}  // namespace mfusim::models::fixtures
