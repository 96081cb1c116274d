#include "study/sweep.h"

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

std::vector<SweepPoint> sweep(const std::string& path, const std::vector<Vary>& vary, const config::LoadOptions& base,
                              const Progress& progress) {
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
  parallel_for(
      points.size(),
      [&](std::size_t i) {
        auto& pt = points[i];
        std::vector<std::string> overrides;
        for (const auto& [k, v] : pt.point) overrides.push_back(k + "=" + v);
        try {
          const auto sc = config::with_overrides(path, overrides, base);
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
