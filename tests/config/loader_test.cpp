// config/loader: data files, scenario resolution, overlays, --set, the bad-input corpus.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "config/loader.h"

namespace fs = std::filesystem;
using namespace mfusim;
using config::ConfigError;

namespace {
const std::string kTests = MFUSIM_TEST_DIR;
const std::string kRoot = fs::path(MFUSIM_TEST_DIR).parent_path().string();

std::vector<fs::path> files_in(const std::string& dir, const std::string& ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

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

TEST_CASE("every hardware/*.toml loads, in SI units") {
  auto files = files_in(kRoot + "/hardware", ".toml");
  CHECK(files.size() >= 6);
  for (const auto& f : files) {
    CAPTURE(f.string());
    hardware::HardwareSpec h;
    REQUIRE_NOTHROW(h = config::load_hardware(f.string()));
    CHECK(h.peak_flops_bf16 > 1e14);
    CHECK(h.hbm_bytes > 1e10);
    CHECK(h.nvlink_bandwidth > 1e10);
    CHECK(h.nic_bandwidth > 1e9);
  }
  auto h = config::load_hardware(kRoot + "/hardware/h100-sxm.toml");
  CHECK(h.peak_flops_bf16 == doctest::Approx(989.4e12));
  CHECK(h.nvlink_bandwidth == doctest::Approx(450e9));
  CHECK(h.nic_bandwidth == doctest::Approx(50e9));
  CHECK(h.launch_overhead == doctest::Approx(4e-6));
  CHECK(config::load_hardware(kRoot + "/hardware/a100-sxm-80gb.toml").peak_flops_fp8 == 0);
  CHECK(config::load_hardware(kRoot + "/hardware/gb200-nvl72.toml").gpus_per_node == 72);
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

TEST_CASE("scenario: named files, SPEC defaults, derived dp and micro-batches") {
  auto loaded = config::load_scenario(kTests + "/config/base.toml");
  const auto& s = loaded.base;
  CHECK(s.name == "Llama-2-70B on 128 x H100");
  CHECK(s.model_ref == "llama2-70b");
  CHECK(s.model.layers == 80);
  CHECK(s.hardware.peak_flops_bf16 == doctest::Approx(989.4e12));
  CHECK(s.gpus == 128);
  // SPEC §3: dp = gpus / (tp * pp * cp).
  CHECK(s.parallel.dp == 4);
  CHECK(s.microbatches() == 128);
  CHECK(s.parallel.cp == 1);
  CHECK(s.parallel.sequence_parallel);
  CHECK(s.parallel.distributed_optimizer);
  CHECK(s.schedule.name == config::ScheduleKind::one_f_one_b);
  CHECK_FALSE(s.schedule.costs);
  CHECK(s.features.flash_attention);
  CHECK(s.features.fused_kernels);
  CHECK(s.features.overlap_grad_reduce);
  CHECK(s.features.overlap_param_gather);
  CHECK_FALSE(s.features.tp_comm_overlap);
  CHECK(s.features.recompute == config::Recompute::none);
  CHECK_FALSE(s.features.cuda_graphs);
  CHECK_FALSE(s.features.python_gc);
  CHECK(s.features.dataloader_workers == 8);
  CHECK(s.features.nccl_algo == config::NcclAlgo::auto_);
  CHECK(config::validate(s).empty());
}

TEST_CASE("[[whatif]]: each rung overlays the one before, fully resolved") {
  auto loaded = config::load_scenario(kTests + "/config/base.toml");
  REQUIRE(loaded.whatifs.size() == 2);
  CHECK(loaded.whatifs[0].name == "+ flash off");
  CHECK_FALSE(loaded.whatifs[0].scenario.features.flash_attention);
  CHECK(loaded.whatifs[0].scenario.schedule.name == config::ScheduleKind::one_f_one_b);
  CHECK_FALSE(loaded.whatifs[1].scenario.features.flash_attention);   // carried from rung 1
  CHECK(loaded.whatifs[1].scenario.schedule.name == config::ScheduleKind::interleaved_1f1b);
  CHECK(loaded.whatifs[1].scenario.parallel.vpp == 2);
  CHECK(loaded.base.features.flash_attention);                        // base untouched
}

TEST_CASE("--set overrides by dotted path, TOML values or bare strings") {
  config::LoadOptions o;
  o.overrides = {"parallel.pp=8", "schedule.name=zb-h1", "features.flash_attention=false", "model.layers=48",
                 "training.precision=\"fp8\""};
  auto s = config::load_scenario(kTests + "/config/base.toml", o).base;
  CHECK(s.parallel.pp == 8);
  CHECK(s.parallel.dp == 2);
  CHECK(s.schedule.name == config::ScheduleKind::zb_h1);
  CHECK_FALSE(s.features.flash_attention);
  CHECK(s.model.layers == 48);   // overlays the named model file
  CHECK(s.model.hidden == 8192);
  CHECK(s.training.precision == config::Precision::fp8);

  auto w = config::with_overrides(kTests + "/config/base.toml", {"parallel.tp=4"});
  CHECK(w.parallel.dp == 8);

  o.overrides = {"parallel.pp=x"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set parallel.pp=x: error: 'parallel.pp' must be an integer") != std::string::npos);
  o.overrides = {"parallel.tp=3"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set parallel.tp=3: error: tensor parallel size (tp=3) does not divide") != std::string::npos);
  o.overrides = {"nonsense"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set nonsense: error: expected KEY=VALUE") != std::string::npos);
}

TEST_CASE("inline model and hardware, schedule-lab costs in seconds") {
  auto s = config::load_scenario(kTests + "/config/inline.toml").base;
  CHECK(s.model_ref == "(inline)");
  CHECK(s.model.head_dim == 64);
  CHECK(s.model.kv_heads == 16);
  CHECK(s.hardware.name == "toy");
  CHECK(s.hardware.gpus_per_node == 8);
  CHECK(s.seed == 7);
  REQUIRE(s.schedule.costs);
  CHECK(s.schedule.costs->f == doctest::Approx(1e-3));
  CHECK(s.schedule.costs->comm == doctest::Approx(0.5e-3));
  REQUIRE(s.schedule.costs->w);
  CHECK_FALSE(s.schedule.costs->fb);
}

TEST_CASE("validate() re-checks a scenario changed in code") {
  auto s = config::load_scenario(kTests + "/config/base.toml").base;
  s.parallel.tp = 3;
  auto d = config::validate(s);
  REQUIRE_FALSE(d.empty());
  CHECK(std::any_of(d.begin(), d.end(), [](const config::Diagnostic& x) {
    return x.str().find("tensor parallel size (tp=3) does not divide the 64 attention heads") != std::string::npos;
  }));
  s = config::load_scenario(kTests + "/config/base.toml").base;
  s.training.global_batch = 6;
  CHECK_FALSE(config::validate(s).empty());
}

TEST_CASE("describe() and list_models()/list_hardware()") {
  auto s = config::load_scenario(kTests + "/config/base.toml").base;
  auto text = config::describe(s);
  CHECK(text.find("dp 4") != std::string::npos);
  CHECK(text.find("micro-batches per step (per pipeline): 128") != std::string::npos);
  CHECK(text.find("schedule: 1f1b") != std::string::npos);
  auto models = config::list_models();
  CHECK(std::find(models.begin(), models.end(), "llama2-70b") != models.end());
  auto hw = config::list_hardware();
  CHECK(std::find(hw.begin(), hw.end(), "h100-sxm") != hw.end());
}

// Each file of tests/bad_input/ starts with "# expect: <text>" (optionally
// "# set: KEY=VALUE" lines); loading it must fail with that text.
TEST_CASE("bad-input corpus: every file fails with its expected diagnostic") {
  auto files = files_in(kTests + "/bad_input", ".toml");
  CHECK(files.size() >= 20);
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    std::ifstream in(f);
    std::string line, expect;
    config::LoadOptions o;
    while (std::getline(in, line) && line.rfind("# ", 0) == 0) {
      if (line.rfind("# expect: ", 0) == 0) expect = line.substr(10);
      if (line.rfind("# set: ", 0) == 0) o.overrides.push_back(line.substr(7));
    }
    REQUIRE_FALSE(expect.empty());
    std::string text = error_text([&] { config::load_scenario(f.string(), o); });
    CAPTURE(text);
    CHECK(text.find(expect) != std::string::npos);
  }
}

TEST_CASE("no crash on mangled input: only ConfigError escapes") {
  std::ifstream in(kTests + "/config/base.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string base = ss.str();
  std::uint64_t x = 12345;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 300; ++i) {
    std::string t = base;
    for (int k = 0; k < 3; ++k) {
      std::size_t at = next() % t.size();
      switch (next() % 3) {
        case 0: t.erase(at, next() % 8); break;
        case 1: t.insert(at, 1, "=[]\".0x9#\n"[next() % 10]); break;
        default: t[at] = static_cast<char>(next() % 128);
      }
    }
    try {
      config::load_scenario_string(t, kTests + "/config/mangled.toml");
    } catch (const ConfigError&) {
    }
  }
}

TEST_CASE("load_model refuses what it cannot model, with the config.json position") {
  auto text = error_text([] { config::load_model(kTests + "/bad_input/data/t5-config.json"); });
  CHECK(text.find("t5-config.json:6:17: error: cannot model this Hugging Face config") != std::string::npos);
  text = error_text([] { config::load_model(kTests + "/bad_input/data/mamba-config.json"); });
  CHECK(text.find("state-space / recurrent layers") != std::string::npos);
  text = error_text([] { config::load_model(kTests + "/config/does-not-exist.toml"); });
  CHECK(text.find("cannot read file") != std::string::npos);
}
