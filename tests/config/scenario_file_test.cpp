// config/scenario_file: scenario resolution, [[whatif]], inline tables, validate(), describe(),
// the bad-input corpus.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "config/loader.h"
#include "config_test_helpers.h"

namespace fs = std::filesystem;
using namespace mfusim;
using namespace config_test;
using config::ConfigError;

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

TEST_CASE("inline model and hardware, schedule-lab costs in seconds") {
  auto s = config::load_scenario(kTests + "/config/inline.toml").base;
  CHECK(s.model_ref == "(inline)");
  CHECK(s.model.head_dim == 64);
  CHECK(s.model.kv_heads == 16);
  CHECK(s.hardware.name == "toy");
  CHECK(s.hardware.gpus_per_node == 8);
  CHECK(s.seed == 7);
  REQUIRE(s.schedule.costs);
  CHECK(s.schedule.costs->f == doctest::Approx(1e-3).scale(0));
  CHECK(s.schedule.costs->comm == doctest::Approx(0.5e-3).scale(0));
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

