// WeightRounding::Bf16 (--precision bf16): a Linear over F16/F32 matrices multiplies their values
// rounded to BF16 (to nearest, ties to even), packed or not, and gives bitwise what a Linear over
// the rounded BF16 matrix gives.
#include "kernels/cpu/bf16_round.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "kernel_test_util.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "test_util.h"

namespace ferrum::kernels {
namespace {

constexpr int64_t kRows = 32, kCols = 64;

TensorView view(DType t, const void* data, size_t bytes) {
  TensorView v;
  v.name = "w";
  v.type = t;
  v.n_dims = 2;
  v.ne = {kCols, kRows, 1, 1};
  v.data = static_cast<const uint8_t*>(data);
  v.nbytes = bytes;
  return v;
}

// F16 values with every pattern of the 3 mantissa bits BF16 drops (ties included), any sign and a
// range of exponents; the first three are checked by hand below.
std::vector<uint16_t> f16_matrix() {
  std::vector<uint16_t> h(kRows * kCols);
  uint32_t s = 12345;
  for (auto& v : h) {
    s = s * 1103515245u + 12345u;
    v = static_cast<uint16_t>(((s >> 8) & 0x8000) | ((10 + (s >> 20) % 10) << 10) | ((s >> 4) & 0x3ff));
  }
  h[0] = 0x3c04;  // 1 + 2^-8: a tie, to the even 1.0 (truncation agrees)
  h[1] = 0x3c0c;  // 1 + 2^-7 + 2^-8: a tie, up to 1 + 2^-6 (truncation: 1 + 2^-7)
  h[2] = 0x3c05;  // 1 + 2^-8 + 2^-10: above the tie, up to 1 + 2^-7 (truncation: 1.0)
  return h;
}

// FERRUM_PACK=0 while it lives when `on` is false (the caller's setting is restored).
struct Packing {
  explicit Packing(bool on) : env("FERRUM_PACK", on ? nullptr : "0") {}
  test::ScopedEnv env;
};

// y for identity activations: token k gives column k of the matrix as multiplied.
std::vector<float> columns(const Linear& lin, ThreadPool& pool) {
  std::vector<float> x(kCols * kCols, 0.0f), y(kCols * kRows);
  for (int64_t k = 0; k < kCols; ++k) x[k * kCols + k] = 1.0f;
  MatmulScratch scratch;
  lin.forward(x.data(), kCols, kCols, y.data(), kRows, pool, Precision::Fast, scratch);
  return y;
}

void check_source(DType type, const void* data, size_t bytes, const std::vector<float>& values) {
  ThreadPool pool(2);
  // The converter's rounding of every value, as a BF16 matrix.
  std::vector<uint16_t> bf(values.size());
  quantize_row(DType::BF16, values.data(), bf.data(), static_cast<int64_t>(values.size()));
  for (bool packed : {true, false}) {
    Packing p(packed);
    const Linear lin({view(type, data, bytes)}, Precision::Fast, pool, WeightRounding::Bf16);
    const Linear ref({view(DType::BF16, bf.data(), bf.size() * 2)}, Precision::Fast, pool);
    EXPECT_EQ(lin.packed() != nullptr, packed && packed_kernels_active());
    EXPECT_TRUE(lin.part_copied(0)) << "packed " << packed;
    const auto y = columns(lin, pool);
    for (int64_t o = 0; o < kRows; ++o)
      for (int64_t k = 0; k < kCols; ++k)
        ASSERT_EQ(y[k * kRows + o], bf16_to_f32(bf[o * kCols + k]))
            << dtype_name(type) << " row " << o << " col " << k << " packed " << packed;
    // Any activations: bitwise the BF16 matrix's product.
    const auto x = test::gaussian(5 * kCols, 3);
    std::vector<float> ya(5 * kRows), yb(5 * kRows);
    MatmulScratch scratch;
    lin.forward(x.data(), kCols, 5, ya.data(), kRows, pool, Precision::Fast, scratch);
    ref.forward(x.data(), kCols, 5, yb.data(), kRows, pool, Precision::Fast, scratch);
    EXPECT_EQ(ya, yb) << dtype_name(type) << " packed " << packed;
  }
}

TEST(Bf16Round, F16MatrixIsMultipliedRoundedToNearestEven) {
  const auto h = f16_matrix();
  std::vector<float> values(h.size());
  for (size_t i = 0; i < h.size(); ++i) values[i] = f16_to_f32(h[i]);
  check_source(DType::F16, h.data(), h.size() * 2, values);
  // The hand-checked ties and near-ties (column k of row 0 is token k's output 0).
  ThreadPool pool(1);
  const Linear lin({view(DType::F16, h.data(), h.size() * 2)}, Precision::Fast, pool, WeightRounding::Bf16);
  const auto y = columns(lin, pool);
  EXPECT_EQ(y[0 * kRows], 1.0f);
  EXPECT_EQ(y[1 * kRows], 1.0f + 0x1p-6f);
  EXPECT_EQ(y[2 * kRows], 1.0f + 0x1p-7f);
}

TEST(Bf16Round, F32MatrixIsMultipliedAsBf16) {
  const auto w = test::gaussian(kRows * kCols, 9);
  check_source(DType::F32, w.data(), w.size() * 4, w);
}

TEST(Bf16Round, QuantizedAndBf16MatricesAreUnchanged) {
  EXPECT_FALSE(rounds_to_bf16(WeightRounding::Bf16, DType::BF16));
  EXPECT_FALSE(rounds_to_bf16(WeightRounding::Bf16, DType::Q4_K));
  EXPECT_FALSE(rounds_to_bf16(WeightRounding::None, DType::F16));
  ThreadPool pool(1);
  test::TestMatrix m(DType::Q8_0, kRows, kCols, 4);
  const Linear plain({m.view}, Precision::Fast, pool),
      rounded({m.view}, Precision::Fast, pool, WeightRounding::Bf16);
  EXPECT_EQ(columns(plain, pool), columns(rounded, pool));
}

}  // namespace
}  // namespace ferrum::kernels
