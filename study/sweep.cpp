#include "study/sweep.h"

#include <cstdint>

#include "report/json.h"
#include "step/simulate.h"
#include "study/parallel_map.h"

namespace mfusim::study {

Vary parse_vary(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= arg.size())
    throw config::ConfigError({config::Diagnostic{"--vary " + arg, 0, 0, "expected KEY=V1,V2,..."}});
  Vary v;
  v.key = arg.substr(0, eq);
  std::string rest = arg.substr(eq + 1);
  std::size_t start = 0;
  while (start <= rest.size()) {
    const auto comma = rest.find(',', start);
    const std::string item = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty())
      throw config::ConfigError({config::Diagnostic{"--vary " + arg, 0, 0, "empty value in the list"}});
    v.values.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return v;
}

namespace {

std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}
// The dotted key of "KEY=VALUE", segments trimmed as the loader does.
std::string key_of(const std::string& spec) {
  const std::string key = spec.substr(0, spec.find('='));
  std::string out;
  std::size_t start = 0;
  for (;;) {
    const auto dot = key.find('.', start);
    if (!out.empty()) out.push_back('.');
    out.append(trimmed(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

}  // namespace

std::size_t sweep_size(const std::vector<Vary>& vary) {
  std::size_t n = 1;
  for (const auto& v : vary) {
    if (v.values.empty()) return 0;
    if (n > SIZE_MAX / v.values.size()) return SIZE_MAX;
    n *= v.values.size();
  }
  return n;
}

void check_vary_keys(const std::string& path, const std::vector<Vary>& vary, const config::LoadOptions& base) {
  std::vector<config::Diagnostic> diags;
  for (const auto& v : vary) {
    if (v.values.empty()) continue;
    const std::string spec = v.key + "=" + v.values.front();
    try {
      config::with_overrides(path, {spec}, base);
    } catch (const config::ConfigError& e) {
      // Only what is wrong with the key itself: a value a point cannot take
      // (pp=3 on 8 GPUs) is that point's infeasibility, reported in the table.
      for (const auto& d : e.diagnostics())
        if (d.file == "--set " + spec && (d.message.rfind("unknown key", 0) == 0 ||
                                          d.message.find("not a table") != std::string::npos ||
                                          d.message.rfind("empty key segment", 0) == 0))
          diags.push_back(config::Diagnostic{"--vary " + v.key + "=...", 0, 0, d.message});
    }
  }
  if (!diags.empty()) throw config::ConfigError(diags);
}

std::vector<std::string> point_overrides(const std::vector<std::pair<std::string, std::string>>& point,
                                         const std::vector<std::string>& user) {
  std::vector<std::string> out = user;
  for (const auto& [k, v] : point) {
    // hardware=NAME@USD_PER_GPU_HOUR: the GPU and its own price (as plan --vary); a
    // bare hardware=NAME: the profile's own list price (price 0 = the profile's, see
    // config/scenario_file.cpp), never the price the scenario gave for its own GPU.
    const auto at = v.find('@');
    if (key_of(k) == "hardware" && at != std::string::npos) {
      out.push_back(k + "=" + v.substr(0, at));
      out.push_back("cost.price_per_gpu_hour=" + v.substr(at + 1));
    } else if (key_of(k) == "hardware") {
      out.push_back(k + "=" + v);
      out.push_back("cost.price_per_gpu_hour=0");
    } else {
      out.push_back(k + "=" + v);
    }
  }
  for (const auto& u : user) {
    const std::string uk = key_of(u);
    for (const auto& [k, v] : point) {
      const std::string pk = key_of(k);
      if (uk.size() > pk.size() && uk.compare(0, pk.size(), pk) == 0 && uk[pk.size()] == '.') {
        out.push_back(u);
        break;
      }
    }
  }
  return out;
}

Shard parse_shard(const std::string& arg) {
  auto bad = [&] {
    return config::ConfigError({config::Diagnostic{
        "--shard " + arg, 0, 0, "expected K/N with 1 <= K <= N (the K-th of N slices, counted from 1), e.g. 2/8"}});
  };
  const auto slash = arg.find('/');
  if (slash == std::string::npos) throw bad();
  auto num = [&](const std::string& t) -> std::size_t {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) throw bad();
    return static_cast<std::size_t>(std::stoul(t));
  };
  Shard s{num(arg.substr(0, slash)), num(arg.substr(slash + 1))};
  if (s.n == 0 || s.k == 0 || s.k > s.n) throw bad();
  return s;
}

std::pair<std::size_t, std::size_t> shard_range(std::size_t total, const Shard& s) {
  // Block k-1 of n: floor(total (k-1) / n) .. floor(total k / n), without overflow.
  auto edge = [&](std::size_t k) { return total / s.n * k + total % s.n * k / s.n; };
  return {edge(s.k - 1), edge(s.k)};
}

std::vector<SweepPoint> sweep(const std::string& path, const std::vector<Vary>& vary, const config::LoadOptions& base,
                              const Progress& progress, const Shard& shard) {
  if (const std::size_t n = sweep_size(vary); n > kMaxSweepPoints) {
    std::string shape;
    for (const auto& v : vary) {
      if (!shape.empty()) shape.append(" x ");
      shape.append(std::to_string(v.values.size())).append(" ").append(v.key);
    }
    throw config::ConfigError({config::Diagnostic{
        "--vary", 0, 0,
        "the sweep has " + (n == SIZE_MAX ? std::string("more than 1.8e19") : std::to_string(n)) + " points (" + shape +
            "), above the limit of " + std::to_string(kMaxSweepPoints) + "; vary fewer values or split the sweep"}});
  }
  std::vector<SweepPoint> points(1);
  for (const auto& v : vary) {
    std::vector<SweepPoint> next;
    for (const auto& p : points)
      for (const auto& val : v.values) {
        SweepPoint q = p;
        q.point.emplace_back(v.key, val);
        next.push_back(std::move(q));
      }
    points.swap(next);
  }
  if (shard.active()) {
    const auto [b, e] = shard_range(points.size(), shard);
    points = std::vector<SweepPoint>(points.begin() + static_cast<std::ptrdiff_t>(b),
                                     points.begin() + static_cast<std::ptrdiff_t>(e));
  }
  parallel_for(
      points.size(),
      [&](std::size_t i) {
        auto& pt = points[i];
        config::LoadOptions lo = base;
        lo.overrides = point_overrides(pt.point, base.overrides);
        try {
          const auto sc = config::load_scenario(path, lo).base;
          step::SimulateOptions so;
          so.keep_timeline = false;
          pt.result = step::simulate(sc, so);
          pt.ok = true;
        } catch (const config::ConfigError& e) {
          std::string msg;
          for (const auto& d : e.diagnostics()) msg += (msg.empty() ? "" : "; ") + d.message;
          pt.error = msg;
        } catch (const std::exception& e) {
          pt.error = e.what();
        }
      },
      progress);
  return points;
}

std::string point_label(const SweepPoint& p) {
  std::string s;
  for (const auto& [k, v] : p.point) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

std::string point_json(const SweepPoint& p) {
  report::JsonWriter w(0);
  w.begin_object();
  for (const auto& [k, v] : p.point) w.key(k).value(v);
  w.end_object();
  return w.str();
}

}  // namespace mfusim::study
