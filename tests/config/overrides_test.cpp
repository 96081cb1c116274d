// config/overrides: --set KEY=VALUE by dotted path.
#include <doctest/doctest.h>

#include "config/loader.h"
#include "config_test_helpers.h"

namespace fs = std::filesystem;
using namespace mfusim;
using namespace config_test;
using config::ConfigError;

TEST_CASE("--set overrides by dotted path, TOML values or bare strings") {
  config::LoadOptions o;
  o.overrides = {"parallel.pp=8", "schedule.name=zb-h1", "features.flash_attention=false", "model.layers=48",
                 "training.precision=\"fp8\""};
  auto s = config::load_scenario(kTests + "/config/base.toml", o).base;
  CHECK(s.parallel.pp == 8);
  CHECK(s.parallel.dp == 2);
  CHECK(s.schedule.name == config::ScheduleKind::zb_h1);
  CHECK_FALSE(s.features.flash_attention);
  CHECK(s.model.layers == 48);   // overlays the named model file
  CHECK(s.model.hidden == 8192);
  CHECK(s.training.precision == config::Precision::fp8);

  auto w = config::with_overrides(kTests + "/config/base.toml", {"parallel.tp=4"});
  CHECK(w.parallel.dp == 8);

  o.overrides = {"parallel.pp=x"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set parallel.pp=x: error: 'parallel.pp' must be an integer") != std::string::npos);
  o.overrides = {"parallel.tp=3"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set parallel.tp=3: error: tensor parallel size (tp=3) does not divide") != std::string::npos);
  o.overrides = {"nonsense"};
  CHECK(error_text([&] { config::load_scenario(kTests + "/config/base.toml", o); })
            .find("--set nonsense: error: expected KEY=VALUE") != std::string::npos);
}

