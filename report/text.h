#pragma once
// The terminal report: summary, breakdown, memory per stage, what-if ladder,
// and a compact ASCII timeline for small pipelines.
#include <string>
#include <vector>

#include "step/result.h"

namespace mfusim::report {

std::string format_seconds(double s);        // "12.34 s", "845.2 ms", "310 us"
std::string format_count(double n);          // "68.98 B", "1.34 M"
// MFU against the bf16 peak (the same model FLOPs per second); for an fp8
// run its MFU counts against the fp8 peak, this makes runs comparable.
double mfu_bf16_peak(const step::StepResult&);

// per_rank: the per-pipeline-rank table even when pp > 16 (it is always shown up to 16).
std::string text_report(const step::StepResult&, const std::vector<step::WhatIfResult>& whatifs = {},
                        bool per_rank = false);

}  // namespace mfusim::report
