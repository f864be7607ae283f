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
    const double ours =
        test::weighted_rel_rms(test::round_trip_rows(c.type, x.data, cols, w), x.data, cols, w);
    const double theirs = test::weighted_rel_rms(ref.data, x.data, cols, w);
    const double plain =
        test::weighted_rel_rms(test::round_trip_rows(c.type, x.data, cols, nullptr), x.data, cols, w);
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
      const auto plain = test::quantize_rows(p.type, x.data, cols, nullptr);
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
    const auto y_flat = test::round_trip_rows(c.type, x, cols, flat.data());
    const auto y_fav = test::round_trip_rows(c.type, x, cols, favoured.data());
    const double before = test::weighted_rel_rms(y_flat, x, cols, only_favoured.data());
    const double after = test::weighted_rel_rms(y_fav, x, cols, only_favoured.data());
    std::printf("  %-6s favoured columns' rel rms: flat importance %.5f, 100x on them %.5f\n",
                dtype_name(c.type), before, after);
    EXPECT_LT(after, 0.97 * before) << dtype_name(c.type);
    EXPECT_LT(test::weighted_rel_rms(y_fav, x, cols, favoured.data()),
              test::weighted_rel_rms(y_flat, x, cols, favoured.data()))
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
      const auto y = test::round_trip_rows(c.type, x, cols, w.data());
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
