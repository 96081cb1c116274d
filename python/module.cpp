// mfusim._core: the CLI's commands with their JSON output captured as text.
// python/mfusim/__init__.py parses it with the json module, so that
// mfusim.run(...) returns exactly what `mfusim run --json` prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <vector>

#include "config/loader.h"
#include "io/output_file.h"
#include "sim/time.h"
#include "tools/commands.h"

namespace py = pybind11;
using namespace mfusim;

namespace {

// The scenario error raised in Python (mfusim.ScenarioError, a ValueError):
// every "file:line:col: error: ..." line of the CLI's exit-2 case.
PyObject* g_scenario_error = nullptr;

config::LoadOptions options(const std::vector<std::string>& overrides, const std::vector<std::string>& search_dirs) {
  config::LoadOptions lo;
  lo.overrides = overrides;
  lo.search_dirs = search_dirs;
  return lo;
}

template <class F>
std::string captured(F&& f) {
  std::ostringstream out;
  std::string error;
  {
    py::gil_scoped_release release;   // plan and sweep run on every core
    try {
      f(out);
    } catch (const config::ConfigError& e) {
      for (const auto& d : e.diagnostics()) error += (error.empty() ? "" : "\n") + d.str();
    } catch (const tools::UserError& e) {
      error = e.what();
    } catch (const io::OutputError& e) {
      error = e.what();
    } catch (const sim::TimeLimitError& e) {
      error = std::string("mfusim: ") + e.what();
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      if (m.find(": error:") == std::string::npos) throw;   // an internal error: RuntimeError
      error = m;
    }
  }
  if (!error.empty()) {
    PyErr_SetString(g_scenario_error, error.c_str());
    throw py::error_already_set();
  }
  return out.str();
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "mfusim's commands, each returning the text of its --json output";
  g_scenario_error = PyErr_NewExceptionWithDoc("mfusim.ScenarioError",
                                               "bad input: each line is 'file:line:col: error: message'",
                                               PyExc_ValueError, nullptr);
  m.attr("ScenarioError") = py::handle(g_scenario_error);
#ifdef MFUSIM_VERSION
  m.attr("__version__") = MFUSIM_VERSION;
#endif

  m.def(
      "run_json",
      [](const std::string& path, const std::vector<std::string>& overrides, const std::vector<std::string>& dirs) {
        return captured([&](std::ostream& out) { tools::cmd_run(path, options(overrides, dirs), true, "", "", out); });
      },
      py::arg("path"), py::arg("overrides"), py::arg("search_dirs"));
  m.def(
      "sweep_json",
      [](const std::string& path, const std::vector<std::string>& vary, const std::vector<std::string>& overrides,
         const std::vector<std::string>& dirs, const std::string& shard) {
        return captured([&](std::ostream& out) {
          tools::SweepArgs a;
          a.vary = vary;
          a.json = true;
          a.shard = shard;
          tools::cmd_sweep(path, options(overrides, dirs), a, {}, out);
        });
      },
      py::arg("path"), py::arg("vary"), py::arg("overrides"), py::arg("search_dirs"), py::arg("shard"));
  m.def(
      "plan_json",
      [](const std::string& path, const std::string& gpus, const std::vector<std::string>& vary, int top,
         const std::string& rank_by, const std::vector<std::string>& overrides, const std::vector<std::string>& dirs,
         const std::string& headroom, const std::string& framework, const std::string& shard) {
        return captured([&](std::ostream& out) {
          tools::PlanExtras x;
          x.headroom = headroom;
          x.framework = framework;
          x.shard = shard;
          x.out = &out;
          tools::cmd_plan(path, options(overrides, dirs), gpus, vary, top, true, rank_by, {}, x);
        });
      },
      py::arg("path"), py::arg("gpus"), py::arg("vary"), py::arg("top"), py::arg("rank_by"), py::arg("overrides"),
      py::arg("search_dirs"), py::arg("headroom"), py::arg("framework"), py::arg("shard"));
  m.def(
      "diagnose_json",
      [](const std::string& path, const std::vector<std::string>& overrides, const std::vector<std::string>& dirs) {
        return captured(
            [&](std::ostream& out) { tools::cmd_diagnose(path, options(overrides, dirs), true, {}, out); });
      },
      py::arg("path"), py::arg("overrides"), py::arg("search_dirs"));
  m.def(
      "merge_json",
      [](const std::vector<std::string>& parts) {
        return captured([&](std::ostream& out) { tools::cmd_merge(parts, out); });
      },
      py::arg("parts"));
}
