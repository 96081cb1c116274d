#pragma once
// `mfusim sweep`: the cartesian product of --vary keys, each point loaded and
// validated like a file (config::with_overrides), simulated in parallel.
#include <functional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/result.h"

namespace mfusim::study {

struct Vary {
  std::string key;                    // dotted scenario key
  std::vector<std::string> values;
};
// Parses "KEY=V1,V2,..." (throws config::ConfigError naming the flag on bad syntax).
Vary parse_vary(const std::string& arg);

struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> point;   // key, value
  bool ok = false;
  std::string error;                  // why the point is infeasible (config error or simulation failure)
  step::StepResult result;
};

using Progress = std::function<void(std::size_t done, std::size_t total)>;

// The most points a sweep runs (docs/scenario.md "Limits"): a larger cartesian
// product is refused before anything runs (config::ConfigError naming --vary).
constexpr std::size_t kMaxSweepPoints = 100000;

// The number of points of the cartesian product of `vary` (saturating at
// SIZE_MAX), and the check above.
std::size_t sweep_size(const std::vector<Vary>& vary);

// Every --vary key must name a scenario key: each is loaded once with its
// first value; an unknown key (a typo) throws config::ConfigError naming it.
void check_vary_keys(const std::string& scenario_path, const std::vector<Vary>& vary, const config::LoadOptions& base);

// The overrides of one point: the user's (--set) first, then the point's, then
// again each user override that refines a key the point sets as a whole
// (--set hardware.hbm_gib=20 under --vary hardware=b200: the point's hardware
// file replaces the table, the user's field is applied to it).
std::vector<std::string> point_overrides(const std::vector<std::pair<std::string, std::string>>& point,
                                         const std::vector<std::string>& user);

// `--shard K/N` (SPEC §2): the K-th of N slices of a point list, K from 1.
// The slices are contiguous blocks of the list in order (sizes differ by at
// most one), so the parts concatenated in K order are the whole list.
struct Shard {
  std::size_t k = 1, n = 1;
  bool active() const { return n > 1; }
};
// Parses "K/N" (1 <= K <= N); throws config::ConfigError naming --shard.
Shard parse_shard(const std::string& arg);
// The [begin, end) of `total` items that shard k of n holds.
std::pair<std::size_t, std::size_t> shard_range(std::size_t total, const Shard&);

// The points of the sweep (of the shard, with one), in the cartesian order of `vary`.
std::vector<SweepPoint> sweep(const std::string& scenario_path, const std::vector<Vary>& vary,
                              const config::LoadOptions& base, const Progress& progress = {}, const Shard& shard = {});

// "pp=4 schedule.name=1f1b" style point label and the JSON object of the point.
std::string point_label(const SweepPoint&);
std::string point_json(const SweepPoint&);

}  // namespace mfusim::study
