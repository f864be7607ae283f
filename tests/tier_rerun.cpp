// Linked into the test binaries that run once more per lower SIMD tier (kernels.tier_*, models.tier_*
// in CMakeLists.txt): a rerun whose FERRUM_ISA names the tier the plain run used already (the best
// one this CPU has: avx2 on an AVX2-only machine) skips its tests instead of repeating them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kernels/cpu/matmul.h"

namespace {

const char* best_tier() {
  const char* best = "scalar";
  for (const char* tier : ferrum::kernels::isa_tiers())
    if (ferrum::kernels::isa_supported(tier)) best = tier;
  return best;
}

class TierRerun : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* rerun = std::getenv("FERRUM_TEST_TIER_RERUN");
    const char* isa = std::getenv("FERRUM_ISA");
    if (!rerun || !isa || std::strcmp(rerun, isa) != 0) return;
    if (ferrum::kernels::isa_supported(isa) && std::strcmp(isa, best_tier()) == 0)
      GTEST_SKIP() << "FERRUM_ISA=" << isa << ": the best tier of this CPU, run by the plain suite";
  }
};

[[maybe_unused]] const auto* const registered = ::testing::AddGlobalTestEnvironment(new TierRerun);

}  // namespace
