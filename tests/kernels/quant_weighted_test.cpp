// Importance-weighted quantization of the types that are not grid i-quants (core/quant_weighted.cpp,
// the weights threaded through quant_fit into the K-quant and IQ4 quantizers): as good as llama.cpp's
// weighted quantizers on the fixture rows with the fixture's importance matrix, the unweighted
// output unchanged without an importance row, and importances that move the error where they say.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/hash.h"
#include "core/quant.h"
#include "formats/imatrix.h"
#include "kernel_test_util.h"

namespace ferrum {
namespace {

using test::data_path;

// Each weighted type with the fixture tensor its llama.cpp reference (kernels/imatrix/<TYPE>.npy,
// make_imatrix_refs.c) was made from.
struct Case {
  DType type;
  const char* tensor;
};
constexpr Case kCases[] = {{DType::Q4_0, "attn_q"},   {DType::Q4_1, "attn_q"},    {DType::Q5_0, "ffn_gate"},
                           {DType::Q5_1, "ffn_gate"}, {DType::Q2_K, "ffn_gate"},  {DType::Q3_K, "ffn_down"},
                           {DType::Q4_K, "ffn_gate"}, {DType::Q5_K, "ffn_down"},  {DType::Q6_K, "ffn_down"},
                           {DType::IQ4_NL, "attn_q"}, {DType::IQ4_XS, "ffn_down"}};

// Quantizes the rows of x (`cols` values each, every row with the same importance row or none).
std::vector<uint8_t> quantize(DType t, const std::vector<float>& x, int64_t cols, const float* importance) {
  const size_t rb = row_size(t, cols), rows = x.size() / static_cast<size_t>(cols);
  std::vector<uint8_t> q(rb * rows);
  for (size_t r = 0; r < rows; ++r) quantize_row(t, x.data() + r * cols, q.data() + r * rb, cols, importance);
  return q;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x, int64_t cols, const float* importance) {
  const auto q = quantize(t, x, cols, importance);
  const size_t rb = row_size(t, cols);
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r)
    dequantize_row(t, q.data() + r * rb, y.data() + r * cols, cols);
  return y;
}

// sqrt(sum w (y - x)^2 / sum w x^2), column c of every row weighted by w[c].
double weighted_rel_rms(const std::vector<float>& y, const std::vector<float>& x, const float* w,
                        int64_t cols) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double wi = w[i % cols], d = double(y[i]) - x[i];
    e += wi * d * d;
    s += wi * double(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

const ImportanceMatrix& fixture_imatrix() {
  static const ImportanceMatrix im = read_imatrix(data_path("models/llama/imatrix.gguf"));
  return im;
}

// llama-quantize --imatrix's quantizers on the same rows with the same importances.
TEST(QuantizeWeighted, AsGoodAsLlamaCpp) {
  for (const Case& c : kCases) {
    const auto x = test::load_npy(data_path(std::string("kernels/") + c.tensor + "_f32.npy"));
    const auto ref = test::load_npy(data_path(std::string("kernels/imatrix/") + dtype_name(c.type) + ".npy"));
    const int64_t cols = x.shape[1];
    ASSERT_EQ(ref.data.size(), x.data.size()) << dtype_name(c.type);
    const float* w = fixture_imatrix().find(std::string("blk.0.") + c.tensor + ".weight", cols);
    ASSERT_NE(w, nullptr) << c.tensor;
    const double ours = weighted_rel_rms(round_trip(c.type, x.data, cols, w), x.data, w, cols);
    const double theirs = weighted_rel_rms(ref.data, x.data, w, cols);
    const double plain = weighted_rel_rms(round_trip(c.type, x.data, cols, nullptr), x.data, w, cols);
    std::printf("  %-6s weighted rel rms: ours %.5f llama.cpp %.5f (ours without importance %.5f)\n",
                dtype_name(c.type), ours, theirs, plain);
    EXPECT_LE(ours, 1.05 * theirs) << dtype_name(c.type);
  }
}

// Without an importance row every type quantizes as it did before the weighted paths existed: FNV-1a
// of the blocks of the 24 fixture rows (attn_q, ffn_gate, ffn_down), as the quantizers wrote them
// then (the quantizers give the same bits on every machine).
TEST(QuantizeWeighted, NoImportanceLeavesTheOutputAsItWas) {
  const struct {
    DType type;
    uint64_t hash;
  } pinned[] = {{DType::Q4_0, 0x355c39b100f4aa12ull},   {DType::Q4_1, 0x50932f43d43d531full},
                {DType::Q5_0, 0x670c63458789375eull},   {DType::Q5_1, 0xe522df2236854ec1ull},
                {DType::Q8_0, 0xcec6e55583dae236ull},   {DType::Q2_K, 0x14bc3779724a1306ull},
                {DType::Q3_K, 0x9bbcf4fa53d15ff9ull},   {DType::Q4_K, 0x03fec94aec6f5b84ull},
                {DType::Q5_K, 0xc83a63bb38fd2484ull},   {DType::Q6_K, 0x0a2ee15589b42150ull},
                {DType::IQ4_NL, 0x5e7ee60e237aa3d2ull}, {DType::IQ4_XS, 0xa69e8be51b85fe5full},
                {DType::MXFP4, 0x448b2a700935b17bull}};
  for (const auto& p : pinned) {
    std::vector<uint8_t> blocks;
    for (const char* tensor : {"attn_q", "ffn_gate", "ffn_down"}) {
      const auto x = test::load_npy(data_path(std::string("kernels/") + tensor + "_f32.npy"));
      const int64_t cols = x.shape[1];
      const auto plain = quantize(p.type, x.data, cols, nullptr);
      // The same through the defaulted argument.
      std::vector<uint8_t> defaulted(plain.size());
      const size_t rb = row_size(p.type, cols);
      for (int64_t r = 0; r < x.shape[0]; ++r)
        quantize_row(p.type, x.data.data() + r * cols, defaulted.data() + r * rb, cols);
      EXPECT_EQ(plain, defaulted) << dtype_name(p.type);
      blocks.insert(blocks.end(), plain.begin(), plain.end());
    }
    EXPECT_EQ(fnv1a64(blocks), p.hash) << dtype_name(p.type);
  }
}

// A quarter of the columns (in runs of 3, scattered over every block) made 100 times as important
// as the rest: their error drops against a flat importance, and the whole row's weighted error
// under the new importance drops too.
TEST(QuantizeWeighted, ImportanceMovesTheError) {
  constexpr int64_t cols = 512, rows = 16;
  const auto x = test::gaussian(cols * rows, 21);
  std::vector<float> flat(cols, 1.0f), favoured(cols, 1.0f);
  for (int64_t c = 0; c < cols; ++c)
    if ((c / 3) % 4 == 0) favoured[c] = 100.0f;
  std::vector<float> only_favoured(cols);
  for (int64_t c = 0; c < cols; ++c) only_favoured[c] = favoured[c] > 1 ? 1.0f : 0.0f;
  for (const Case& c : kCases) {
    const auto y_flat = round_trip(c.type, x, cols, flat.data());
    const auto y_fav = round_trip(c.type, x, cols, favoured.data());
    const double before = weighted_rel_rms(y_flat, x, only_favoured.data(), cols);
    const double after = weighted_rel_rms(y_fav, x, only_favoured.data(), cols);
    std::printf("  %-6s favoured columns' rel rms: flat importance %.5f, 100x on them %.5f\n",
                dtype_name(c.type), before, after);
    EXPECT_LT(after, 0.97 * before) << dtype_name(c.type);
    EXPECT_LT(weighted_rel_rms(y_fav, x, favoured.data(), cols),
              weighted_rel_rms(y_flat, x, favoured.data(), cols))
        << dtype_name(c.type);
  }
}

// Importance rows that weigh nothing somewhere (zeros: columns no calibration token reached), zero
// rows and rows of one value give finite blocks; a zero row stays zero.
TEST(QuantizeWeighted, ZeroImportanceAndDegenerateRows) {
  constexpr int64_t cols = 512;
  std::vector<float> importance(cols, 2.0f);
  for (int64_t c = 0; c < 256; ++c) importance[c] = 0.0f;  // a whole super-block
  for (int64_t c = 300; c < 317; ++c) importance[c] = 0.0f;
  auto x = test::gaussian(cols * 3, 5);
  for (int64_t c = 0; c < cols; ++c) {
    x[cols + c] = 0.0f;
    x[2 * cols + c] = -0.25f;
  }
  for (const Case& c : kCases) {
    for (const std::vector<float>& w : {importance, std::vector<float>(cols, 0.0f)}) {
      const auto y = round_trip(c.type, x, cols, w.data());
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(c.type) << " " << i;
      for (int64_t i = 0; i < cols; ++i) ASSERT_EQ(y[cols + i], 0.0f) << dtype_name(c.type);
      double e = 0, s = 0;
      for (int64_t i = 0; i < cols; ++i) {
        e += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
        s += double(x[i]) * x[i];
        EXPECT_NEAR(y[2 * cols + i], -0.25f, 0.02f) << dtype_name(c.type);
      }
      EXPECT_LT(std::sqrt(e / s), 0.5) << dtype_name(c.type);  // unweighted fits where nothing weighs
    }
  }
}

}  // namespace
}  // namespace ferrum
