// Megatron-LM's --account-for-embedding-in-pipeline-split and
// --account-for-loss-in-pipeline-split (parallel.account_for_*_in_pipeline_split):
// the embedding and the loss take one layer slot each in the even split over the
// pp x vpp virtual stages (megatron/core/transformer/transformer_block.py,
// get_num_layers_to_build): (layers + 2) / (pp * vpp) per virtual stage, one
// fewer on the first and on the last.
#include <doctest/doctest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/lower.h"
#include "step/simulate.h"

using namespace mfusim;

namespace {
std::string scenario(int pp, int vpp, bool emb, bool loss, int gpus, const std::string& extra = "") {
  return "model = \"llama3.1-405b\"\nhardware = \"h100-sxm\"\n[cluster]\ngpus = " + std::to_string(gpus) +
         "\n[training]\nseq_len = 8192\nglobal_batch = " + std::to_string(2 * pp) +
         "\nmicro_batch = 1\n[parallel]\ntp = 8\npp = " + std::to_string(pp) + "\nvpp = " + std::to_string(vpp) +
         "\nsequence_parallel = true\n" + (emb ? "account_for_embedding_in_pipeline_split = true\n" : "") +
         (loss ? "account_for_loss_in_pipeline_split = true\n" : "") + extra + "[schedule]\nname = \"" +
         (vpp > 1 ? "interleaved-1f1b" : "1f1b") + "\"\n";
}

std::vector<int> counts(const config::Scenario& s, int stages) {
  std::vector<int> c;
  for (const auto& st : step::split_layers(s, stages)) c.push_back(static_cast<int>(st.size()));
  return c;
}

std::string error_of(const std::string& text) {
  try {
    config::load_scenario_string(text, "s.toml");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("pipeline split: 405B's 126 layers on pp 8 x vpp 8 with the embedding and the loss counted") {
  const auto sc = config::load_scenario_string(scenario(8, 8, true, true, 64), "s.toml").base;
  CHECK(sc.parallel.account_for_embedding_in_pipeline_split);
  CHECK(sc.parallel.account_for_loss_in_pipeline_split);
  const auto c = counts(sc, 64);
  REQUIRE(c.size() == 64);
  // 128 slots / 64 virtual stages = 2: the first holds the embedding + 1 layer, the last 1 layer + the loss.
  CHECK(c.front() == 1);
  CHECK(c.back() == 1);
  for (std::size_t i = 1; i + 1 < c.size(); ++i) CHECK(c[i] == 2);
  CHECK(std::accumulate(c.begin(), c.end(), 0) == 126);
  // Layers stay in order, each once.
  int next = 0;
  for (const auto& st : step::split_layers(sc, 64))
    for (int l : st) CHECK(l == next++);
  const auto r = step::simulate(sc);
  CHECK(r.step_time_s > 0);
}

TEST_CASE("pipeline split: pp 16 x vpp 8: the first virtual stage is the embedding only, the last the loss only") {
  const auto sc = config::load_scenario_string(scenario(16, 8, true, true, 128), "s.toml").base;
  const auto c = counts(sc, 128);
  REQUIRE(c.size() == 128);
  CHECK(c.front() == 0);
  CHECK(c.back() == 0);
  for (std::size_t i = 1; i + 1 < c.size(); ++i) CHECK(c[i] == 1);
}

TEST_CASE("pipeline split: only the embedding counted") {
  // 126 + 1 = 127 does not divide by 8: refused with the key's position.
  const std::string e = error_of(scenario(8, 1, true, false, 64));
  CHECK(e.find("s.toml:14:1: error: 126 layers of") != std::string::npos);
  CHECK(e.find("+ the embedding = 127 do not divide evenly over pp=8") != std::string::npos);
  // Both counted on pp 2 without interleaving: 128 / 2 = 64 slots per stage, 63 layers each.
  const auto sc = config::load_scenario_string(scenario(2, 1, true, true, 16), "s.toml").base;
  const auto c = counts(sc, 2);
  CHECK(c == std::vector<int>{63, 63});
}

TEST_CASE("pipeline split: vpp must divide the slots per pipeline stage; no mixing with explicit splits") {
  // 128 / 8 = 16 per pipeline stage, not divisible by vpp 3.
  const std::string e = error_of(scenario(8, 3, true, true, 64));
  CHECK(e.find("s.toml:14:1: error:") != std::string::npos);
  CHECK(e.find("the 16 per pipeline stage do not divide over 3 chunks") != std::string::npos);
  const std::string m = error_of(scenario(8, 8, true, true, 64, "first_stage_layers = 2\n"));
  CHECK(m.find("cannot be given with stage_layers or first/last_stage_layers") != std::string::npos);
  // Without the keys, 126 layers do not divide over 64 virtual stages: the usual error.
  const std::string plain = error_of(scenario(8, 8, false, false, 64));
  CHECK(plain.find("do not divide the 126 layers") != std::string::npos);
}
