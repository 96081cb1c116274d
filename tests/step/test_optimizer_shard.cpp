// The distributed optimizer's state is sharded over the data-parallel group with context
// parallelism (dp x cp), the group its gradient reduce-scatter and parameter gather run over
// (Megatron's get_data_parallel_group(with_context_parallel=True)).
#include <doctest/doctest.h>

#include "step/lower.h"
#include "tests/shipped_scenario.h"

using namespace mfusim;

TEST_CASE("distributed optimizer: Adam's 12 bytes per parameter sharded over dp x cp") {
  for (const char* cp : {"parallel.cp=1", "parallel.cp=2"}) {
    INFO(cp);
    const auto s = testing::shipped_scenario("128xh100_llama31_70b.toml", {cp});
    REQUIRE(s.parallel.distributed_optimizer);
    const auto l = step::lower(s);
    const double shard = static_cast<double>(s.parallel.dp) * s.parallel.cp;
    for (std::size_t r = 0; r < l.params_bytes.size(); ++r) {
      INFO("rank " << r);
      // params_bytes: 2 bytes per parameter (bf16); optimizer: 12 bytes per parameter over dp x cp.
      CHECK(l.optimizer_bytes[r] == doctest::Approx(12.0 * (l.params_bytes[r] / 2.0) / shard).epsilon(1e-9));
    }
  }
}
