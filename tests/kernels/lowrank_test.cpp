// The LoRA up-product kernel (y += u B^T with B stored transposed) on every ISA the CPU has:
// against a float64 reference (F32 and F16 matrices, ranks and widths off the vector sizes), only
// the named rows touched, and each row's result the same whatever rows share the call (bitwise).
#include "kernels/cpu/lowrank.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "kernel_test_util.h"
#include "kernels/cpu/matmul.h"

namespace ferrum::kernels {
namespace {

using test::IsaGuard;

TensorView matrix(DType t, int64_t out, int64_t r, std::vector<uint8_t>& buf) {
  const auto v = test::gaussian(static_cast<size_t>(out * r), static_cast<uint32_t>(out + r));
  buf.resize(out * r * (t == DType::F16 ? 2 : 4));
  for (int64_t i = 0; i < out * r; ++i) {
    if (t == DType::F16)
      reinterpret_cast<uint16_t*>(buf.data())[i] = f32_to_f16(v[i]);
    else
      reinterpret_cast<float*>(buf.data())[i] = v[i];
  }
  TensorView bt;
  bt.name = "bt";
  bt.type = t;
  bt.n_dims = 2;
  bt.ne = {out, r, 1, 1};
  bt.data = buf.data();
  bt.nbytes = buf.size();
  return bt;
}

double at(const TensorView& m, int64_t i) {
  return m.type == DType::F16 ? f16_to_f32(reinterpret_cast<const uint16_t*>(m.data)[i])
                              : reinterpret_cast<const float*>(m.data)[i];
}

TEST(Lowrank, MatchesFloat64AndIsTheSameForAnyRowsOnEveryIsa) {
  IsaGuard guard;
  ThreadPool pool(2);
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    for (DType t : {DType::F32, DType::F16})
      for (auto [out, r] : {std::pair<int64_t, int64_t>{5, 1}, {64, 4}, {300, 16}, {1027, 7}}) {
        SCOPED_TRACE(std::string(isa) + " " + dtype_name(t) + " out " + std::to_string(out) + " r " +
                     std::to_string(r));
        std::vector<uint8_t> buf;
        const TensorView bt = matrix(t, out, r, buf);
        const int64_t n = 7, ld = out + 3;
        const auto u = test::gaussian(static_cast<size_t>(n * r), 99);
        const std::vector<int64_t> rows = {0, 2, 3, 4, 5, 6, 8};  // row 1 and 7 untouched
        std::vector<float> y(9 * ld, 1.0f);
        lowrank_up_add(u.data(), r, n, bt, rows.data(), y.data(), ld, pool);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t o = 0; o < out; ++o) {
            double want = 1.0;
            for (int64_t j = 0; j < r; ++j) want += double(u[k * r + j]) * at(bt, j * out + o);
            ASSERT_NEAR(y[rows[k] * ld + o], want, 1e-5 * (1 + std::fabs(want)));
          }
        for (int64_t o = 0; o < ld; ++o) EXPECT_EQ(y[1 * ld + o], 1.0f);
        for (int64_t o = out; o < ld; ++o) EXPECT_EQ(y[0 * ld + o], 1.0f);  // past the outputs
        // Each row alone: bitwise the same.
        for (int64_t k = 0; k < n; ++k) {
          std::vector<float> one(ld, 1.0f);
          const int64_t zero = 0;
          lowrank_up_add(u.data() + k * r, r, 1, bt, &zero, one.data(), ld, pool);
          EXPECT_EQ(std::memcmp(one.data(), &y[rows[k] * ld], out * sizeof(float)), 0) << "row " << k;
        }
      }
  }
}

}  // namespace
}  // namespace ferrum::kernels
