#pragma once
// The commands of the CLI that need more than a few lines: plan, diagnose,
// and the picture/trace writers bound to a StepResult.
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

int cmd_plan(const std::string& scenario, const config::LoadOptions&, const std::string& gpus_list,
             const std::vector<std::string>& vary, int top, bool json, const std::string& rank_by,
             const study::Progress&);
int cmd_diagnose(const std::string& scenario, const config::LoadOptions&, bool json, const study::Progress&);

}  // namespace mfusim::tools
