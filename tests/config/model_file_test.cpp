// config/model_file, config/hf_config: models/*.toml and Hugging Face config.json.
#include <doctest/doctest.h>

#include "config/loader.h"
#include "config_test_helpers.h"

namespace fs = std::filesystem;
using namespace mfusim;
using namespace config_test;
using config::ConfigError;

TEST_CASE("every models/*.toml loads and satisfies the ModelSpec invariants") {
  auto files = files_in(kRoot + "/models", ".toml");
  CHECK(files.size() >= 20);
  for (const auto& f : files) {
    CAPTURE(f.string());
    models::ModelSpec m;
    REQUIRE_NOTHROW(m = config::load_model(f.string()));
    CHECK(m.layers > 0);
    CHECK(m.hidden > 0);
    CHECK(m.heads % m.kv_heads == 0);
    CHECK(m.head_dim > 0);
    CHECK(m.vocab > 0);
  }
  auto l = config::load_model(kRoot + "/models/llama2-70b.toml");
  CHECK(l.layers == 80);
  CHECK(l.hidden == 8192);
  CHECK(l.ffn_hidden == 28672);
  CHECK(l.kv_heads == 8);
  CHECK(l.head_dim == 128);
  CHECK(l.activation == models::Activation::swiglu);
  CHECK_FALSE(l.tied_embeddings);
  auto g = config::load_model(kRoot + "/models/gpt-530b.toml");
  CHECK(g.layers == 105);
  CHECK(g.hidden == 20480);
  CHECK(g.heads == 128);
  CHECK(g.vocab == 51200);
  CHECK(g.activation == models::Activation::gelu);
  // Nemotron-4: squared ReLU with the conventions its NeMo config states.
  auto n = config::load_model(kRoot + "/models/nemotron4-15b.toml");
  CHECK(n.activation == models::Activation::squared_relu);
  CHECK(n.bias == std::optional<bool>(false));
  CHECK(n.dropout == std::optional<bool>(false));
  CHECK(n.rope == std::optional<bool>(true));
  CHECK(n.layernorm == std::optional<bool>(true));
  CHECK_FALSE(l.bias.has_value());   // unset: the family's (models/conventions.h)
  auto d = config::load_model(kRoot + "/models/deepseek-v3.toml");
  REQUIRE(d.is_moe());
  CHECK(d.moe->experts == 256);
  CHECK(d.moe->top_k == 8);
  CHECK(d.moe->dense_layers == 3);
  CHECK_FALSE(d.is_moe_layer(2));
  CHECK(d.is_moe_layer(3));
  REQUIRE(d.mla);
  CHECK(d.mla->kv_lora_rank == 512);
}


TEST_CASE("a Hugging Face config.json maps to the same ModelSpec as our TOML") {
  auto hf = config::load_model(kTests + "/config/llama3-8b-config.json");
  auto ours = config::load_model(kRoot + "/models/llama3-8b.toml");
  CHECK(hf.layers == ours.layers);
  CHECK(hf.hidden == ours.hidden);
  CHECK(hf.ffn_hidden == ours.ffn_hidden);
  CHECK(hf.heads == ours.heads);
  CHECK(hf.kv_heads == ours.kv_heads);
  CHECK(hf.vocab == ours.vocab);
  CHECK(hf.activation == models::Activation::swiglu);
  CHECK_FALSE(hf.tied_embeddings);

  auto ds = config::load_model(kTests + "/config/deepseek-v3-config.json");
  auto dt = config::load_model(kRoot + "/models/deepseek-v3.toml");
  REQUIRE(ds.moe);
  CHECK(ds.moe->experts == dt.moe->experts);
  CHECK(ds.moe->top_k == dt.moe->top_k);
  CHECK(ds.moe->expert_ffn_hidden == dt.moe->expert_ffn_hidden);
  CHECK(ds.moe->shared_experts == dt.moe->shared_experts);
  CHECK(ds.moe->dense_layers == dt.moe->dense_layers);
  CHECK(ds.ffn_hidden == 18432);
  REQUIRE(ds.mla);
  CHECK(ds.mla->q_lora_rank == 1536);
  CHECK(ds.mla->qk_rope_head_dim == 64);
}


TEST_CASE("load_model refuses what it cannot model, with the config.json position") {
  auto text = error_text([] { config::load_model(kTests + "/bad_input/data/t5-config.json"); });
  CHECK(text.find("t5-config.json:6:17: error: cannot model this Hugging Face config") != std::string::npos);
  text = error_text([] { config::load_model(kTests + "/bad_input/data/mamba-config.json"); });
  CHECK(text.find("state-space / recurrent layers") != std::string::npos);
  text = error_text([] { config::load_model(kTests + "/config/does-not-exist.toml"); });
  CHECK(text.find("cannot read file") != std::string::npos);
}
