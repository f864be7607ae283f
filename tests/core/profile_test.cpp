// The op profile (core/profile.h): nothing recorded while off, exclusive time for nested scopes,
// per-layer rows, and a report that names what it measured.
#include "core/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace ferrum::profile {
namespace {

void busy(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

const Row* find(const Report& r, Op op, int layer) {
  for (const Row& row : r.rows)
    if (row.op == op && row.layer == layer) return &row;
  return nullptr;
}

TEST(Profile, OffRecordsNothing) {
  enable(false);
  {
    Scope s(Op::Matmul);
    busy(1);
  }
  count_pass();
  const Report r = take();
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.passes, 0);
}

TEST(Profile, NestedScopesCountExclusiveTime) {
  enable(true);
  const std::string detail = "Q4_K 64x64";
  set_layer(3);
  {
    Scope outer(Op::Matmul, &detail);
    busy(20);
    {
      Scope inner(Op::PoolWait);
      busy(30);
    }
  }
  set_layer(-1);
  {
    Scope s(Op::Sampling);
    busy(5);
  }
  count_pass();
  count_pass();
  const Report r = take();
  enable(false);
  EXPECT_EQ(r.passes, 2);
  const Row* mm = find(r, Op::Matmul, 3);
  const Row* wait = find(r, Op::PoolWait, 3);
  const Row* samp = find(r, Op::Sampling, -1);
  ASSERT_TRUE(mm && wait && samp);
  EXPECT_EQ(mm->detail, "Q4_K 64x64");
  EXPECT_EQ(mm->calls, 1);
  // The matmul's own time excludes the wait inside it (20 ms, with it 50 ms).
  EXPECT_GE(mm->seconds, 0.019);
  EXPECT_LT(mm->seconds, 0.045);
  EXPECT_GE(wait->seconds, 0.029);
  EXPECT_GE(samp->seconds, 0.0049);
  const std::string text = format(r, "pp4");
  EXPECT_NE(text.find("profile: pp4 (2 forward passes"), std::string::npos) << text;
  EXPECT_NE(text.find("Q4_K 64x64"), std::string::npos) << text;
  EXPECT_NE(text.find("pool wait"), std::string::npos) << text;
  EXPECT_NE(text.find(" 3:"), std::string::npos) << "per-layer line: " << text;
  EXPECT_TRUE(take().rows.empty()) << "take starts afresh";
}

}  // namespace
}  // namespace ferrum::profile
