#pragma once
// The commands of the CLI: run, sweep, plan, diagnose, merge, and the
// picture/trace writers bound to a StepResult. Each prints to an output
// stream, so that the Python module (python/) gets the very text the CLI
// prints (`run --json` and `mfusim.run` cannot drift apart).
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "step/result.h"
#include "study/sweep.h"

namespace mfusim::tools {

// Bad command-line input without a file position (printed as is, exit 2).
struct UserError : std::runtime_error { using std::runtime_error::runtime_error; };

std::string chrome_trace_of(const step::StepResult&);
std::string svg_of(const step::StepResult&);

// An output path that names an input file (the scenario) would destroy it.
void refuse_overwrite(const std::string& out, const char* flag, const std::string& input);

int cmd_run(const std::string& scenario, const config::LoadOptions&, bool json, const std::string& trace,
            const std::string& svg, std::ostream& out = std::cout, bool per_rank = false,
            bool coarse = false);

// sweep: with a shard, only that slice of the points runs and the output is a
// part for `mfusim merge` (JSON).
struct SweepArgs {
  std::vector<std::string> vary;
  std::string csv;
  bool json = false;
  std::string shard;        // "K/N" or empty
};
int cmd_sweep(const std::string& scenario, const config::LoadOptions&, const SweepArgs&, const study::Progress& = {},
              std::ostream& out = std::cout);

// plan's options beyond the positional ones (SPEC §2).
struct PlanExtras {
  std::string shard;        // "K/N": a part for `mfusim merge`
  std::string headroom;     // "GIB" or "P%": memory kept free per GPU beyond the simulated peak
  std::string framework = "any";
  std::ostream* out = &std::cout;
};
int cmd_plan(const std::string& scenario, const config::LoadOptions&, const std::string& gpus_list,
             const std::vector<std::string>& vary, int top, bool json, const std::string& rank_by,
             const study::Progress&, const PlanExtras& = {});
int cmd_diagnose(const std::string& scenario, const config::LoadOptions&, bool json, const study::Progress&,
                 std::ostream& out = std::cout);

// `mfusim merge PART...`: the parts of a sharded sweep or plan (any order)
// into the output the unsharded command prints with --json.
int cmd_merge(const std::vector<std::string>& parts, std::ostream& out = std::cout);

// Shared by run_sweep.cpp, commands.cpp and merge.cpp.
// A JSON array of already-serialised top-level values, laid out as
// report::JsonWriter(2) lays out an array of them.
std::string json_array(const std::vector<std::string>& items);

}  // namespace mfusim::tools
