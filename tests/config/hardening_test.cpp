// Hostile input to every loader (issue 18): nesting past the cap, keys that
// would skip the unknown-key check, config.json type and duplicate errors,
// and sizes that a quadratic reader could not load in time.
#include <doctest/doctest.h>

#include <cmath>

#include <chrono>
#include <fstream>
#include <string>

#include "config/loader.h"
#include "step/simulate.h"
#include "config_test_helpers.h"

namespace fs = std::filesystem;
using namespace mfusim;
using namespace config_test;

namespace {

const std::string kBase =
    "model = \"llama2-7b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = 8\n[training]\nglobal_batch = 16\n";

std::string dotted(int segments) {
  std::string k = "a";
  for (int i = 1; i < segments; ++i) k += ".a";
  return k;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("mfusim-hardening-" + name);
  std::ofstream(p) << text;
  return p.string();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const char* kTooDeep = "tables nest more than 64 levels deep";

}  // namespace

TEST_CASE("a 15,000-segment dotted key or table header is refused with its position, in every loader") {
  const std::string key = dotted(15000);   // 30 KB: past the stack of a recursive walk
  std::string text = error_text([&] { config::load_scenario_string(kBase + "features." + key + " = 1\n", "s.toml"); });
  CHECK(text.find(std::string("s.toml:7:1: error: ") + kTooDeep) != std::string::npos);
  text = error_text([&] { config::load_scenario_string(kBase + std::string("[") + key + "]\nx = 1\n", "h.toml"); });
  CHECK(text.find(std::string("h.toml:7:1: error: ") + kTooDeep) != std::string::npos);
  text = error_text([&] { config::load_scenario_string(kBase + std::string("[[") + key + "]]\nx = 1\n", "a.toml"); });
  CHECK(text.find(std::string("a.toml:7:1: error: ") + kTooDeep) != std::string::npos);

  const std::string model = temp_file("model.toml", "name = \"m\"\nlayers = 2\n" + key + " = 1\n");
  text = error_text([&] { config::load_model(model); });
  CHECK(text.find(model + ":3:1: error: " + kTooDeep) != std::string::npos);
  const std::string hw = temp_file("hw.toml", "name = \"h\"\n[" + key + "]\n");
  text = error_text([&] { config::load_hardware(hw); });
  CHECK(text.find(hw + ":2:1: error: " + kTooDeep) != std::string::npos);
  const std::string cal = temp_file("cal.toml", "# calibration\n" + key + " = 1\n");
  config::LoadOptions o;
  o.overrides = {"calibration=" + cal};
  text = error_text([&] { config::load_scenario_string(kBase, kTests + "/config/s.toml", o); });
  CHECK(text.find(cal + ":2:1: error: " + kTooDeep) != std::string::npos);
  o.overrides = {key + "=1"};
  text = error_text([&] { config::load_scenario_string(kBase, "s.toml", o); });
  CHECK(text.find("error: the key has 15000 dotted segments; keys nest at most 64 levels deep") != std::string::npos);
  // The public pre-scan, for readers that call toml::parse themselves.
  CHECK_THROWS_AS(config::check_toml_nesting(key + " = 1\n", "p.toml"), config::ConfigError);
  CHECK_NOTHROW(config::check_toml_nesting("a.b.c = 1\n[x.y]\nz = [[1], {q = 2}]\n", "p.toml"));
}

TEST_CASE("the nesting cap counts headers, dotted keys, inline tables and arrays, not text inside strings") {
  // 64 levels: header 62 + dotted key 2.
  std::string at_cap = std::string("[") + dotted(62) + "]\nb.c = 1\n";
  CHECK_NOTHROW(config::check_toml_nesting(at_cap, "c.toml"));
  CHECK_THROWS_AS(config::check_toml_nesting(std::string("[") + dotted(62) + "]\nb.c.d = 1\n", "c.toml"), config::ConfigError);
  // Inline tables and arrays add to the key's depth: 60 + 4 ok, 60 + 5 not.
  CHECK_NOTHROW(config::check_toml_nesting(dotted(60) + " = [[[{x = 1}]]]\n", "c.toml"));
  CHECK_THROWS_AS(config::check_toml_nesting(dotted(60) + " = [[[[{x = 1}]]]]\n", "c.toml"), config::ConfigError);
  // Brackets, braces and dots inside strings and comments are text.
  const std::string noise(5000, '[');
  CHECK_NOTHROW(config::check_toml_nesting("a = \"" + noise + "\"\nb = '" + noise + ".{'\n# " + noise +
                                               "\nc = \"\"\"\n" + noise + "\n\"\"\"\n\"" + dotted(100) +
                                               "\" = 1\n",
                                           "c.toml"));
  // Bytes toml++'s key parser asserts on (debug) are refused before it, with the position.
  std::string text = error_text([] { config::check_toml_nesting("a = 1\n[=training]\n", "k.toml"); });
  CHECK(text.find("k.toml:2:2: error: expected a key (bare or quoted) here") != std::string::npos);
  text = error_text([] { config::check_toml_nesting("[\x1e" "arallel]\n", "k.toml"); });
  CHECK(text.find("k.toml:1:2: error: expected a key (bare or quoted) here") != std::string::npos);
  text = error_text([] { config::check_toml_nesting("a = \x1e\n", "k.toml"); });
  CHECK(text.find("k.toml:1:5: error: a control character (byte 0x1E) outside a string or comment") !=
        std::string::npos);
  text = error_text([] { config::check_toml_nesting("report \xc2\xa7" "4.2 = 1\n", "k.toml"); });
  CHECK(text.find("k.toml:1:8: error: a non-ASCII character (byte 0xC2) outside a string or comment") !=
        std::string::npos);
  CHECK_NOTHROW(config::check_toml_nesting("name = \"\xc2\xa7 4.2\" # \xc2\xa7\r\nx = 1\r\n", "k.toml"));
  // Every shipped scenario stays far inside the cap (the snapshot and golden tests load them all).
  CHECK_NOTHROW(config::load_scenario(kTests + "/config/base.toml"));
}

TEST_CASE("keys beginning with '@' are unknown keys, never internal overlay slots") {
  std::string text = error_text([&] { config::load_scenario_string(kBase + "\"@seq_len\" = 2\n", "s.toml"); });
  CHECK(text.find("s.toml:7:1: error: unknown key 'training.@seq_len'") != std::string::npos);
  text = error_text(
      [&] { config::load_scenario_string("\"@model\" = { layers = 16 }\n" + kBase, "s.toml"); });
  CHECK(text.find("s.toml:1:1: error: unknown key '@model' (did you mean 'model'?)") != std::string::npos);
  config::LoadOptions o;
  o.overrides = {"@model.layers=16"};
  text = error_text([&] { config::load_scenario_string(kBase, "s.toml", o); });
  CHECK(text.find("--set @model.layers=16: error: unknown key '@model'") != std::string::npos);
  text = error_text([&] {
    config::load_scenario_string(kBase + "[[whatif]]\nname = \"w\"\n\"@hardware\" = { hbm_gib = 20 }\n", "s.toml");
  });
  CHECK(text.find("s.toml:9:1: error: unknown key '@hardware'") != std::string::npos);
  const std::string model = temp_file("at-model.toml", "name = \"m\"\nlayers = 2\nhidden = 64\nffn_hidden = 128\n"
                                                       "heads = 4\nvocab = 100\n\"@x\" = 1\n");
  text = error_text([&] { config::load_model(model); });
  CHECK(text.find(model + ":7:1: error: unknown key 'model.@x'") != std::string::npos);
  // The named-model overlay that --set model.KEY builds still works.
  o.overrides = {"model.layers=16"};
  CHECK(config::load_scenario_string(kBase, kTests + "/config/s.toml", o).base.model.layers == 16);
}

TEST_CASE("config.json: a non-string hidden_act and duplicate keys are errors with their position") {
  std::string text = error_text([] { config::load_model(kTests + "/bad_input/data/hidden-act-config.json"); });
  CHECK(text.find("hidden-act-config.json:7:17: error: 'hidden_act' must be a string") != std::string::npos);
  text = error_text([] { config::load_model(kTests + "/bad_input/data/duplicate-config.json"); });
  CHECK(text.find("duplicate-config.json:6:3: error: duplicate key \"hidden_size\" in this object") !=
        std::string::npos);
  const std::string nested = temp_file("dup-nested-config.json",
                                       "{\"hidden_size\": 64, \"q\": {\"a\": 1,\n \"a\": 2}}\n");
  text = error_text([&] { config::load_model(nested); });
  CHECK(text.find(nested + ":2:2: error: duplicate key \"a\"") != std::string::npos);
  const std::string tied = temp_file("tied-config.json",
                                     "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4,\n"
                                     " \"vocab_size\": 100, \"tie_word_embeddings\": \"yes\"}\n");
  text = error_text([&] { config::load_model(tied); });
  CHECK(text.find(tied + ":2:44: error: 'tie_word_embeddings' must be a boolean") != std::string::npos);
}

TEST_CASE("loaders are linear: a 3.4 MB config.json of 200k keys and an 80 KB --set load in time") {
  std::string json = "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                     "\"vocab_size\": 100, \"intermediate_size\": 128";
  for (int i = 0; i < 200000; ++i) json += ", \"key_" + std::to_string(1000000 + i) + "\": " + std::to_string(i);
  json += "}\n";
  CHECK(json.size() > 3'400'000);
  const std::string big = temp_file("big-config.json", json);
  auto t0 = std::chrono::steady_clock::now();
  models::ModelSpec m;
  REQUIRE_NOTHROW(m = config::load_model(big));
  CHECK(m.hidden == 64);
  CHECK(seconds_since(t0) < 5.0);   // quadratic: minutes

  // An 80 KB inline table as a --set value: thousands of nodes, each labelled with the override.
  std::string table = "{";
  for (int i = 0; table.size() < 80000; ++i) table += (i ? ", k" : "k") + std::to_string(i) + " = 1";
  table += "}";
  config::LoadOptions o;
  o.overrides = {"features=" + table};
  t0 = std::chrono::steady_clock::now();
  std::string text = error_text([&] { config::load_scenario_string(kBase, "s.toml", o); });
  CHECK(text.find("error: unknown key 'features.k0'") != std::string::npos);
  CHECK(seconds_since(t0) < 5.0);
  // An 80 KB key: one long unknown segment, or too many segments.
  o.overrides = {"features." + std::string(80000, 'x') + "=1"};
  CHECK(error_text([&] { config::load_scenario_string(kBase, "s.toml", o); }).find("error: unknown key 'features.xxx") !=
        std::string::npos);
  o.overrides = {dotted(40000) + "=1"};
  CHECK(error_text([&] { config::load_scenario_string(kBase, "s.toml", o); }).find("keys nest at most 64") !=
        std::string::npos);
}

TEST_CASE("check refuses a zero-layer middle stage and physically implausible hardware") {
  for (const char* layers : {"[10, 0, 12, 10]", "[10, 12, 0, 10]", "[0, 0, 22, 10]"}) {
    CAPTURE(layers);
    const std::string text = error_text([&] {
      config::load_scenario_string(kBase + "[parallel]\npp = 4\nstage_layers = " + layers + "\n", "z.toml");
    });
    CHECK(text.find("z.toml:9:1: error: stage_layers[") != std::string::npos);
    CHECK(text.find("] = 0: every pipeline stage between the first and the last needs at least one layer") !=
          std::string::npos);
  }
  // The first and the last stage may hold only the embedding / the LM head (Megatron's
  // account-for-embedding/loss layouts): accepted, and the step simulates.
  for (const char* layers : {"[0, 10, 12, 10]", "[10, 12, 10, 0]", "[0, 16, 16, 0]"}) {
    CAPTURE(layers);
    const auto sc =
        config::load_scenario_string(kBase + "[parallel]\npp = 4\nstage_layers = " + layers + "\n", "z.toml").base;
    CHECK(sc.parallel.stage_layers.size() == 4);
    const auto r = step::simulate(sc);
    CHECK(r.step_time_s > 0);
    CHECK(std::isfinite(r.mfu));
  }
  config::LoadOptions o;
  for (const char* set : {"hardware.hbm_bandwidth_gbs=1e-300", "hardware.hbm_bandwidth_gbs=1e300",
                          "hardware.nvlink_bandwidth_gbs=0.5", "hardware.nic_bandwidth_gbs=2e6",
                          "hardware.nvlink_latency_us=1e12", "hardware.launch_overhead_us=2e6",
                          "hardware.peak_tflops_bf16=1e7", "hardware.hbm_gib=1e7", "hardware.peak_tflops_fp8=1e-9"}) {
    CAPTURE(set);
    o.overrides = {set};
    CHECK(error_text([&] { config::load_scenario_string(kBase, kTests + "/config/s.toml", o); })
              .find("is outside the physically plausible range") != std::string::npos);
  }
  o.overrides = {"training.micro_batch=1048576", "training.global_batch=8388608", "training.seq_len=16777216"};
  CHECK(error_text([&] { config::load_scenario_string(kBase, kTests + "/config/s.toml", o); })
            .find("micro_batch*seq_len*hidden = 1048576*16777216*4096 activation elements per micro-batch exceed") !=
        std::string::npos);
}
