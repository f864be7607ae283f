// Linked into the test binaries that run once more per lower SIMD tier (kernels.tier_*, models.tier_*
// in CMakeLists.txt): a rerun whose FERRUM_ISA names the tier the plain run used already (the best
// one this CPU has: avx2 on an AVX2-only machine) skips its tests instead of repeating them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kernels/cpu/matmul.h"

namespace {

class TierRerun : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* rerun = std::getenv("FERRUM_TEST_TIER_RERUN");  // the tier FERRUM_ISA forces
    if (rerun && std::strcmp(rerun, ferrum::kernels::best_isa()) == 0)
      GTEST_SKIP() << "FERRUM_ISA=" << rerun << ": the best tier of this CPU, run by the plain suite";
  }
};

[[maybe_unused]] const auto* const registered = ::testing::AddGlobalTestEnvironment(new TierRerun);

}  // namespace
