// Block formats: bit-exact dequantization against llama.cpp's gguf-py, ggml's reference quantizer
// reproduced byte for byte (Q8_0, Q4_0), and quantize -> dequantize error bounds per type.
#include "core/quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/quant_fit.h"
#include "ferrum/error.h"
#include "kernel_test_util.h"

namespace ferrum {
namespace {

using test::data_path;

class DequantFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(DequantFixture, BitExactWithLlamaCpp) {
  const std::string name = GetParam();
  const DType t = *dtype_from_name(name);
  const auto raw = test::read_bytes(data_path("kernels/" + name + ".bin"));
  const auto ref = test::load_npy(data_path("kernels/" + name + ".npy"));
  ASSERT_EQ(ref.shape.size(), 2u);
  const int64_t rows = ref.shape[0], cols = ref.shape[1];
  ASSERT_EQ(raw.size(), row_size(t, cols) * rows);
  std::vector<float> out(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, raw.data() + r * row_size(t, cols), out.data(), cols);
    for (int64_t i = 0; i < cols; ++i) {
      uint32_t a, b;
      std::memcpy(&a, &out[i], 4);
      std::memcpy(&b, &ref.data[r * cols + i], 4);
      ASSERT_EQ(a, b) << name << " row " << r << " col " << i << ": " << out[i] << " vs "
                      << ref.data[r * cols + i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantFixture,
                         ::testing::Values("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K",
                                           "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                                           "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "F16", "BF16"));

// llama-quantize (no imatrix) uses ggml's reference quantizer for Q8_0, Q4_0 and Q4_1: the bytes in
// the fixture GGUF must be reproduced exactly from the F32 rows.
TEST(Quantize, ReproducesGgmlQ8_0Q4_0AndQ4_1) {
  const auto src = test::load_npy(data_path("kernels/attn_q_f32.npy"));
  const int64_t rows = src.shape[0], cols = src.shape[1];
  for (const char* name : {"Q8_0", "Q4_0", "Q4_1"}) {
    const DType t = *dtype_from_name(name);
    const auto ref = test::read_bytes(data_path(std::string("kernels/") + name + ".bin"));
    std::vector<uint8_t> out(row_size(t, cols) * rows);
    for (int64_t r = 0; r < rows; ++r)
      quantize_row(t, src.data.data() + r * cols, out.data() + r * row_size(t, cols), cols);
    ASSERT_EQ(out.size(), ref.size());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], ref[i]) << name << " byte " << i;
  }
}

double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    s += double(b[i]) * b[i];
  }
  return std::sqrt(e / s);
}

std::vector<float> round_trip(DType t, const std::vector<float>& x, int64_t cols) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  std::vector<uint8_t> q(row_size(t, cols));
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(t, x.data() + r * cols, q.data(), cols);
    dequantize_row(t, q.data(), out.data() + r * cols, cols);
  }
  return out;
}

// Relative RMS error of quantize -> dequantize on Gaussian data; the bounds are ~1.3x what the
// quantizers reach (a broken level search or scale packing blows far past them).
TEST(Quantize, RoundTripErrorBounds) {
  const auto x = test::gaussian(64 * 512, 7);
  const struct {
    DType t;
    double bound;
  } cases[] = {{DType::Q8_0, 0.007}, {DType::Q4_0, 0.11},   {DType::Q5_0, 0.055}, {DType::Q5_1, 0.05},
               {DType::Q4_K, 0.09},  {DType::Q5_K, 0.046},  {DType::Q6_K, 0.022}, {DType::Q8_K, 0.009},
               {DType::F16, 0.0003}, {DType::BF16, 0.0022}, {DType::Q4_1, 0.11},  {DType::Q2_K, 0.4},
               {DType::Q3_K, 0.2},   {DType::IQ4_NL, 0.1},  {DType::IQ4_XS, 0.1}, {DType::MXFP4, 0.2}};
  for (const auto& c : cases) {
    const double err = rel_rms(round_trip(c.t, x, 512), x);
    EXPECT_LT(err, c.bound) << dtype_name(c.t);
    EXPECT_GT(err, c.bound / 10) << dtype_name(c.t) << ": suspiciously exact";
    std::printf("  %-5s rel rms %.5f\n", dtype_name(c.t), err);
  }
}

// Our K-quant search on the real fixture rows must be about as good as llama.cpp's quantizer
// (llama-quantize output dequantized by gguf-py) on the same rows.
TEST(Quantize, KQuantsAsGoodAsLlamaCpp) {
  const struct {
    const char* type;
    const char* src;
  } cases[] = {{"Q4_K", "ffn_gate"}, {"Q5_K", "ffn_down"}, {"Q6_K", "ffn_down"}, {"Q4_1", "attn_q"},
               {"Q2_K", "ffn_gate"}, {"Q3_K", "ffn_down"}, {"IQ4_NL", "attn_q"}, {"IQ4_XS", "ffn_down"}};
  for (const auto& c : cases) {
    const auto src = test::load_npy(data_path(std::string("kernels/") + c.src + "_f32.npy"));
    const auto ref = test::load_npy(data_path(std::string("kernels/") + c.type + ".npy"));
    const double theirs = rel_rms(ref.data, src.data);
    const double ours = rel_rms(round_trip(*dtype_from_name(c.type), src.data, src.shape[1]), src.data);
    std::printf("  %s: ours %.5f llama.cpp %.5f\n", c.type, ours, theirs);
    EXPECT_LT(ours, theirs * 1.1) << c.type;
  }
}

// MXFP4 blocks as the format defines them: value = E2M1 level x 2^(e - 127), the levels stored doubled
// (0, 1, 2, 3, 4, 6, 8, 12 and their negatives) against a scale of 2^(e - 128), every exponent from
// the denormal 2^-128 to 2^127 exact; the nibbles in Q4_0's order.
TEST(Quantize, Mxfp4BlocksDecodeAsTheFormatSays) {
  const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int e : {0, 1, 2, 100, 127, 128, 140, 254, 255}) {
    uint8_t block[17];
    block[0] = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float out[32];
    dequantize_row(DType::MXFP4, block, out, 32);
    for (int j = 0; j < 32; ++j) {
      const int nib = j < 16 ? j : 15 - (j - 16);
      const float want = (nib < 8 ? 1.0f : -1.0f) * std::ldexp(e2m1[nib % 8], e - 127);
      ASSERT_EQ(out[j], want) << "e " << e << " element " << j;
    }
  }
  // Quantizing picks the exponent of the largest magnitude (as E2M1's 6 at most) and the nearest
  // levels: values on the grid come back exactly.
  std::vector<float> x(64);
  for (int j = 0; j < 64; ++j) x[j] = (j % 2 ? -1.0f : 1.0f) * std::ldexp(e2m1[j % 8], j < 32 ? -3 : 5);
  std::vector<uint8_t> q(row_size(DType::MXFP4, 64));
  std::vector<float> back(64);
  quantize_row(DType::MXFP4, x.data(), q.data(), 64);
  dequantize_row(DType::MXFP4, q.data(), back.data(), 64);
  EXPECT_EQ(back, x);
  EXPECT_EQ(q[0], 127 - 3);  // block 0: amax 6 * 2^-3 = 0.75, exponent floor(log2 0.75) - 2 = -3
}

// ggml's own MXFP4 quantizer and dequantizer on the same floats (tests/data/kernels/MXFP4_ggml.bin:
// 2240 floats (attn_q rows, then blocks of zeros, denormals, huge values, ties between levels,
// exact levels, wide values), ggml's 70 blocks, ggml's 2240 dequantized floats): ferrum decodes
// ggml's blocks value for value and writes the same blocks byte for byte, but for a block whose
// largest magnitude is below 2^-125: ggml's exponent floor(log2 amax) - 2 + 127 goes negative and
// wraps in its uint8_t cast (the denormal block gets e = 252, a scale of 2^124), where ferrum
// clamps it to 0 and keeps the values (here: every one rounds to zero).
TEST(Quantize, Mxfp4AsGgml) {
  std::ifstream f(test::unxz("kernels/MXFP4_ggml.bin"), std::ios::binary);
  constexpr int64_t n = 2240, nb = n / 32;
  std::vector<float> x(n), theirs(n), ours(n);
  std::vector<uint8_t> q(nb * 17), mine(nb * 17);
  f.read(reinterpret_cast<char*>(x.data()), n * 4);
  f.read(reinterpret_cast<char*>(q.data()), static_cast<std::streamsize>(q.size()));
  f.read(reinterpret_cast<char*>(theirs.data()), n * 4);
  ASSERT_TRUE(f) << "truncated fixture";
  dequantize_row(DType::MXFP4, q.data(), ours.data(), n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&ours[i], &theirs[i], 4), 0)
        << "element " << i << ": " << ours[i] << " vs " << theirs[i];
  quantize_row(DType::MXFP4, x.data(), mine.data(), n);
  int tiny = 0;
  for (int64_t b = 0; b < nb; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    if (amax > 0 && amax < std::ldexp(1.0f, -125)) {
      ++tiny;
      EXPECT_EQ(q[17 * b], 252) << "ggml's wrapped exponent";
      EXPECT_EQ(mine[17 * b], 0);
      std::vector<float> back(32);
      dequantize_row(DType::MXFP4, &mine[17 * b], back.data(), 32);
      for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(back[j] - x[32 * b + j]), std::ldexp(1.0f, -128));
      continue;
    }
    EXPECT_EQ(std::memcmp(&mine[17 * b], &q[17 * b], 17), 0) << "block " << b;
  }
  EXPECT_EQ(tiny, 1);
}

TEST(Quantize, ZeroRowsAndBadInput) {
  std::vector<float> zero(256, 0.0f), out(256, 1.0f);
  for (DType t :
       {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K,
        DType::Q6_K, DType::Q8_K, DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4}) {
    std::vector<uint8_t> q(row_size(t, 256), 0xAB);
    quantize_row(t, zero.data(), q.data(), 256);
    dequantize_row(t, q.data(), out.data(), 256);
    for (float v : out) ASSERT_EQ(v, 0.0f) << dtype_name(t);
  }
  EXPECT_THROW(dequantize_row(DType::Q4_K, zero.data(), out.data(), 100), Error);
  EXPECT_THROW(dequantize_row(DType::TQ1_0, zero.data(), out.data(), 256), Error);
  EXPECT_THROW(quantize_row(DType::IQ2_XXS, zero.data(), out.data(), 256), Error);
  EXPECT_THROW(quantize_row(DType::I32, zero.data(), out.data(), 256), Error);
}

}  // namespace
}  // namespace ferrum

namespace ferrum {
namespace {

TEST(Quantize, PackedScaleUnpackMatchesPerIndex) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 1000; ++iter) {
    uint8_t s[12];
    for (auto& b : s) b = static_cast<uint8_t>(rng());
    uint64_t sc, mn;
    k4_scales_mins(s, sc, mn);
    for (int j = 0; j < 8; ++j) {
      uint8_t a, m;
      k4_scale_min(j, s, a, m);
      ASSERT_EQ(a, (sc >> (8 * j)) & 0xFF);
      ASSERT_EQ(m, (mn >> (8 * j)) & 0xFF);
    }
  }
}

// The quantizers' rounding: half to even like ggml's (the magic-number path below 2^22), saturated
// beyond, 0 for NaN.
TEST(Quantize, NearestIntRoundsHalfToEven) {
  using quant_fit::nearest_int;
  EXPECT_EQ(nearest_int(2.5f), 2);
  EXPECT_EQ(nearest_int(3.5f), 4);
  EXPECT_EQ(nearest_int(-2.5f), -2);
  EXPECT_EQ(nearest_int(-0.49f), 0);
  EXPECT_EQ(nearest_int(4194302.5f), 4194302);
  EXPECT_EQ(nearest_int(4194305.0f), 4194305);
  EXPECT_EQ(nearest_int(-1.0e7f), -10000000);
  EXPECT_EQ(nearest_int(1.0e30f), 2000000000);
  EXPECT_EQ(nearest_int(-std::numeric_limits<float>::infinity()), -2000000000);
  EXPECT_EQ(nearest_int(std::numeric_limits<float>::quiet_NaN()), 0);
  for (float v = -300.0f; v < 300.0f; v += 0.125f) EXPECT_EQ(nearest_int(v), std::nearbyint(v)) << v;
}

}  // namespace
}  // namespace ferrum
