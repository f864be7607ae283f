// The 16-row packed weights (kernels/cpu/packed.h, linear.h): the packing keeps every value, the
// packed products of every tier the CPU has (AVX2, AVX2 + VNNI, AVX-512) agree with the row-major
// Fast path and with a float64 reference, are bitwise the same on every tier (integer types and
// F16), a token's result is bitwise the same alone or in a batch of any size, and fused parts equal
// separate products.
#include "kernels/cpu/packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/quant_mxfp4.h"
#include "ferrum/error.h"
#include "kernel_test_util.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"

namespace ferrum::kernels::packed_test {
namespace {

// Shapes exercise full tiles and tails: 96 columns = 3 blocks (a lone last tile), 4864 = 152
// blocks / 19 super-blocks, 896 = Qwen2.5-0.5B's width (28 blocks), several 16-row groups.
struct Shape {
  DType type;
  int64_t rows, cols;
};
const Shape kShapes[] = {{DType::Q4_0, 16, 96},     {DType::Q4_0, 48, 4864},  {DType::Q4_0, 32, 2048},
                         {DType::Q5_0, 16, 96},     {DType::Q5_0, 48, 4864},  {DType::Q5_0, 32, 896},
                         {DType::Q8_0, 16, 96},     {DType::Q8_0, 48, 4864},  {DType::Q8_0, 32, 2048},
                         {DType::Q4_K, 16, 256},    {DType::Q4_K, 48, 4864},  {DType::Q4_K, 32, 2048},
                         {DType::Q4_K, 16, 768},    {DType::Q5_K, 16, 256},   {DType::Q5_K, 48, 4864},
                         {DType::Q5_K, 32, 2048},   {DType::Q6_K, 16, 256},   {DType::Q6_K, 48, 4864},
                         {DType::Q6_K, 32, 2048},   {DType::F16, 16, 96},     {DType::F16, 48, 4864},
                         {DType::F16, 16, 2048},    {DType::BF16, 16, 96},    {DType::BF16, 48, 4864},
                         {DType::BF16, 16, 2048},   {DType::IQ4_NL, 16, 96},  {DType::IQ4_NL, 48, 4864},
                         {DType::IQ4_NL, 32, 2048}, {DType::IQ4_XS, 16, 256}, {DType::IQ4_XS, 48, 4864},
                         {DType::IQ4_XS, 32, 2048}, {DType::Q4_1, 16, 96},    {DType::Q4_1, 48, 4864},
                         {DType::Q4_1, 32, 2048},   {DType::Q3_K, 16, 256},   {DType::Q3_K, 48, 4864},
                         {DType::Q3_K, 32, 2048},   {DType::Q2_K, 16, 256},   {DType::Q2_K, 48, 4864},
                         {DType::Q2_K, 32, 2048},   {DType::MXFP4, 16, 96},   {DType::MXFP4, 48, 4864},
                         {DType::MXFP4, 32, 2880},  {DType::Q4_Z, 16, 96},    {DType::Q4_Z, 48, 4864},
                         {DType::Q4_Z, 32, 2048},   {DType::Q4_Z, 16, 160}};  // Q4_Z: 3, 152, 64, 5 blocks

// Whether the active tier has the packed kernel of type t.
bool has_kernel(DType t) {
  return packed_kernel_for(t);
}

TEST(Packed, UnpackedRowsEqualTheFile) {
  ThreadPool pool(2);
  for (const Shape& s : kShapes) {
    test::TestMatrix m(s.type, s.rows, s.cols, 11);
    const auto want = m.dequantized();
    const auto p = pack_matrix(std::span<const TensorView>(&m.view, 1), pool);
    std::vector<float> row(s.cols);
    for (int64_t r = 0; r < s.rows; ++r) {
      unpack_row(*p, r, row.data());
      ASSERT_EQ(0, std::memcmp(row.data(), want.data() + r * s.cols, s.cols * sizeof(float)))
          << dtype_name(s.type) << " " << s.rows << "x" << s.cols << " row " << r;
    }
  }
}

TEST(Packed, RejectsWhatItCannotPack) {
  ThreadPool pool(1);
  test::TestMatrix odd(DType::Q4_0, 24, 64, 1);  // 24 rows: not a multiple of 16
  EXPECT_THROW(pack_matrix(std::span<const TensorView>(&odd.view, 1), pool), Error);
  test::TestMatrix f16(DType::F16, 16, 48, 1);  // 48 columns: not a multiple of 32
  EXPECT_THROW(pack_matrix(std::span<const TensorView>(&f16.view, 1), pool), Error);
  test::TestMatrix q5(DType::Q5_1, 16, 256, 1);  // no packed layout for Q5_1
  EXPECT_THROW(pack_matrix(std::span<const TensorView>(&q5.view, 1), pool), Error);
  // MXFP4 with a block scale F16 cannot hold (2^72): not packed (Linear multiplies it unpacked); a
  // block of zeros may have any scale.
  test::TestMatrix mx(DType::MXFP4, 16, 64, 3);
  auto* blk = reinterpret_cast<BlockMXFP4*>(const_cast<uint8_t*>(mx.view.row(5)));
  EXPECT_TRUE(packable_values(mx.view));
  const uint8_t e = blk[1].e;
  blk[1].e = 200;
  EXPECT_FALSE(packable_values(mx.view));
  EXPECT_THROW(pack_matrix(std::span<const TensorView>(&mx.view, 1), pool), Error);
  std::memset(blk[1].qs, 0x88, 16);  // -0 everywhere
  EXPECT_TRUE(packable_values(mx.view));
  blk[1].e = e;
  test::TestMatrix a(DType::Q4_0, 16, 64, 1), b(DType::Q8_0, 16, 64, 2);
  const TensorView mixed[] = {a.view, b.view};
  EXPECT_THROW(pack_matrix(mixed, pool), Error);
}

// The tiers with packed kernels that this CPU has.
std::vector<std::string> packed_tiers() {
  std::vector<std::string> v;
  for (const char* isa : isa_tiers())
    if (isa_supported(isa) && isa_kernels(isa)->packed) v.push_back(isa);
  return v;
}

// Runs each test once per packed tier (forced), restoring the tier in use afterwards.
class PackedProduct : public ::testing::Test {
 protected:
  void SetUp() override {
    if (packed_tiers().empty())
      GTEST_SKIP() << "no tier with packed kernels on this CPU (packing is off there)";
  }
  void TearDown() override { force_isa(saved_.c_str()); }
  template <class F>
  void each_tier(F&& f) {
    for (const std::string& isa : packed_tiers()) {
      SCOPED_TRACE(isa);
      force_isa(isa.c_str());
      f(isa);
    }
  }
  void expect_extremes_exact(const test::TestMatrix& m, std::initializer_list<float> cs);
  std::string saved_ = active_isa();
};

// Packed random rows of shape s x n_tok random tokens in one call: every token's result is the bits
// of that token multiplied alone.
void expect_batch_gives_each_alone(const Shape& s, int64_t n_tok, uint32_t w_seed, uint32_t x_seed,
                                   ThreadPool& pool, MatmulScratch& scratch) {
  test::TestMatrix m(s.type, s.rows, s.cols, w_seed);
  const Linear lin({m.view}, Precision::Fast, pool);
  const auto x = test::gaussian(static_cast<size_t>(n_tok * s.cols), x_seed);
  std::vector<float> batch(n_tok * s.rows), one(s.rows);
  lin.forward(x.data(), s.cols, n_tok, batch.data(), s.rows, pool, Precision::Fast, scratch);
  for (int64_t t = 0; t < n_tok; ++t) {
    lin.forward(x.data() + t * s.cols, s.cols, 1, one.data(), s.rows, pool, Precision::Fast, scratch);
    ASSERT_EQ(0, std::memcmp(one.data(), batch.data() + t * s.rows, s.rows * sizeof(float)))
        << dtype_name(s.type) << " " << s.rows << "x" << s.cols << " token " << t;
  }
}

TEST_F(PackedProduct, MatchesRowMajorFastPathAndReference) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  each_tier([&](const std::string& isa) {
    for (const Shape& s : kShapes) {
      if (!has_kernel(s.type)) continue;  // a tier without this layout's kernel leaves it unpacked
      test::TestMatrix m(s.type, s.rows, s.cols, 5);
      const Linear lin({m.view}, Precision::Fast, pool);
      ASSERT_NE(lin.packed(), nullptr) << dtype_name(s.type);
      const int64_t n_tok = 7;
      const auto x = test::gaussian(static_cast<size_t>(n_tok * s.cols), 9);
      std::vector<float> yp(n_tok * s.rows), yr(n_tok * s.rows);
      lin.forward(x.data(), s.cols, n_tok, yp.data(), s.rows, pool, Precision::Fast, scratch);
      matmul(m.view, x.data(), s.cols, n_tok, yr.data(), s.rows, pool, Precision::Fast, scratch);
      const auto w = m.dequantized();
      double worst_rows = 0, worst_ref = 0;
      for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t r = 0; r < s.rows; ++r) {
          double ref = 0, mag = 0;
          for (int64_t i = 0; i < s.cols; ++i) {
            ref += static_cast<double>(w[r * s.cols + i]) * x[t * s.cols + i];
            mag += std::fabs(static_cast<double>(w[r * s.cols + i]) * x[t * s.cols + i]);
          }
          const float got = yp[t * s.rows + r];
          // Same 8-bit activations as the row-major Fast path: only the float summation order differs.
          worst_rows = std::max(worst_rows, std::fabs(got - yr[t * s.rows + r]) / (mag + 1e-9));
          // Against exact float64 with float activations: the 8-bit activation error (~1/254 per value).
          worst_ref = std::max(worst_ref, std::fabs(got - ref) / (mag + 1e-9));
        }
      EXPECT_LT(worst_rows, 1e-5) << dtype_name(s.type) << " " << s.rows << "x" << s.cols;
      EXPECT_LT(worst_ref, 2e-2) << dtype_name(s.type) << " " << s.rows << "x" << s.cols;
    }
  });
}

TEST_F(PackedProduct, TokenResultDoesNotDependOnBatch) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  each_tier([&](const std::string& isa) {
    for (const Shape& s : kShapes) {
      if (!has_kernel(s.type)) continue;  // a tier without this layout's kernel leaves it unpacked
      expect_batch_gives_each_alone(s, 19, 3, 4, pool, scratch);  // tiles of 8, 8, 3 (AVX2: 6, 6, 6, 1)
      if (HasFatalFailure()) return;
    }
  });
}

// Kernels with the tokens in vector lanes (AVX2 Q4_K and Q5_K, PackedKernels::Kernel::lanes) take tiles of 13
// to 16 interleaved tokens: 157 tokens make three work items (the last of 29 tokens: a tile of 16 and
// one of 13 with 3 lanes empty); each token keeps the bits of its product alone.
TEST_F(PackedProduct, LaneTilesGiveEachTokensBits) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  each_tier([&](const std::string& isa) {
    for (const Shape& s : kShapes) {
      if (!has_kernel(s.type) || !active_kernels().packed->of(s.type).lanes) continue;
      expect_batch_gives_each_alone(s, 157, 5, 6, pool, scratch);
      if (HasFatalFailure()) return;
    }
  });
}

// With many tokens the F16 products go through blocks of inputs (matmul.cpp, f16_in_blocks: 512 inputs, 128
// tokens and 8 groups per item, from 32 tokens), carrying their sums between blocks: a token's result must
// stay the bits of it alone (the whole-row kernel). 130 tokens make two token blocks (the second of 2), 10
// groups two group chunks, 1056 and 4864 inputs a short last block.
TEST_F(PackedProduct, BlocksOfInputsGiveTheWholeRowBits) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  const Shape shapes[] = {{DType::F16, 160, 1056}, {DType::F16, 48, 4864}};
  each_tier([&](const std::string& isa) {
    for (const Shape& s : shapes) {
      if (!has_kernel(s.type)) continue;
      expect_batch_gives_each_alone(s, 130, 31, 17, pool, scratch);
      if (HasFatalFailure()) return;
    }
  });
}

// The integer types' sums are exact and every tier does the same float steps per lane, so the
// tiers' results are the same bits; F16 too (same FMA order). BF16 without vdpbf16ps differs only
// where that instruction flushes denormals.
TEST_F(PackedProduct, TiersGiveTheSameBits) {
  const auto tiers = packed_tiers();
  if (tiers.size() < 2) GTEST_SKIP() << "one packed tier on this CPU";
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (const Shape& s : kShapes) {
    test::TestMatrix m(s.type, s.rows, s.cols, 21);
    const Linear lin({m.view}, Precision::Fast, pool);
    const int64_t n_tok = 11;
    const auto x = test::gaussian(static_cast<size_t>(n_tok * s.cols), 13);
    std::vector<float> first, y(n_tok * s.rows);
    for (const std::string& isa : tiers) {
      force_isa(isa.c_str());
      lin.forward(x.data(), s.cols, n_tok, y.data(), s.rows, pool, Precision::Fast, scratch);
      if (first.empty()) {
        first = y;
        continue;
      }
      for (size_t i = 0; i < y.size(); ++i) {
        if (s.type == DType::BF16)
          ASSERT_NEAR(y[i], first[i], 1e-6 * (std::fabs(first[i]) + 1e-3))
              << isa << " " << s.rows << "x" << s.cols;
        else
          ASSERT_EQ(y[i], first[i]) << isa << " vs " << tiers[0] << " " << dtype_name(s.type) << " " << s.rows
                                    << "x" << s.cols << " output " << i;
      }
    }
  }
}

// A packed product of rows holding extreme levels against constant activations, on every tier,
// one token (a gemv reads the activations apart from a tile) and 5: a negative c makes every level
// -127; a positive one (and -c first in each 256 inputs, its largest magnitude) 127. Constant
// activations are quantized exactly (for the F16 scales of 32-input blocks, c / 127 must be one), so
// the float64 reference is tight.
void PackedProduct::expect_extremes_exact(const test::TestMatrix& m, std::initializer_list<float> cs) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  const int64_t rows = m.view.rows(), cols = m.view.cols();
  const Linear lin({m.view}, Precision::Fast, pool);
  ASSERT_NE(lin.packed(), nullptr);
  const auto w = m.dequantized();
  for (const float c : cs) {
    const int64_t n_tok = 5;
    std::vector<float> x(n_tok * cols, c);
    if (c > 0)
      for (int64_t i = 0; i < n_tok * cols; i += 256) x[i] = -c;
    std::vector<double> ref(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i) ref[r] += static_cast<double>(w[r * cols + i]) * x[i];
    each_tier([&](const std::string&) {
      std::vector<float> y(n_tok * rows);
      for (const int64_t n : {int64_t{1}, n_tok}) {
        lin.forward(x.data(), cols, n, y.data(), rows, pool, Precision::Fast, scratch);
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < rows; ++r)
            EXPECT_NEAR(y[t * rows + r], ref[r], 1e-5 * std::fabs(ref[r]) + 1e-6)
                << dtype_name(m.view.type) << " row " << r << ", token " << t << " of " << n
                << ", activations " << c;
      }
    });
  }
}

// The extremes of Q6_K's integer sums: rows of all-0 and all-63 levels. The tiers without VNNI add
// 2 steps of vpmaddubsw in 16 bits before they widen (packed_ymm.h): 2 * 2 * 63 * 127 = 32004, just
// within int16 (a level of -128, or a third step, would overflow).
TEST_F(PackedProduct, Q6KExtremeLevelsStayExact) {
  const int64_t rows = 32, cols = 512;
  test::TestMatrix m(DType::Q6_K, rows, cols, 1);
  auto* blocks = reinterpret_cast<BlockQ6_K*>(m.bytes.data());
  for (int64_t i = 0; i < rows * cols / 256; ++i) {
    const bool high = (i / (cols / 256)) % 2 == 1;  // odd rows: level 63 everywhere, even rows: 0
    std::memset(blocks[i].ql, high ? 0xFF : 0, sizeof blocks[i].ql);
    std::memset(blocks[i].qh, high ? 0xFF : 0, sizeof blocks[i].qh);
    for (int s = 0; s < 16; ++s) blocks[i].scales[s] = static_cast<int8_t>(s % 2 ? -128 : 127);
    blocks[i].d = 0x3C00;  // 1.0
  }
  expect_extremes_exact(m, {-0.75f, 1.0f});
}

// The extremes of Q4_0's: rows of all-0 and all-15 levels. Without VNNI the block's bias starts the
// low 16-bit half of each row's sums (packed_ymm.h, half32): all-0 levels against 127s end there at
// -8 * 32 * 127 = -32512, the bound that keeps those sums within int16.
TEST_F(PackedProduct, Q40ExtremeLevelsStayExact) {
  const int64_t rows = 32, cols = 512;
  test::TestMatrix m(DType::Q4_0, rows, cols, 1);
  auto* blocks = reinterpret_cast<BlockQ4_0*>(m.bytes.data());
  for (int64_t i = 0; i < rows * cols / 32; ++i) {
    const bool high = (i / (cols / 32)) % 2 == 1;  // odd rows: level 15 everywhere, even rows: 0
    std::memset(blocks[i].qs, high ? 0xFF : 0, sizeof blocks[i].qs);
    blocks[i].d = 0x3C00;  // 1.0
  }
  expect_extremes_exact(m, {-127.0f / 128, 127.0f / 64});
}

TEST_F(PackedProduct, FusedPartsEqualSeparateProducts) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  test::TestMatrix q(DType::Q4_K, 32, 512, 1), k(DType::Q4_K, 16, 512, 2), v(DType::Q4_K, 16, 512, 3);
  const Linear fused({q.view, k.view, v.view}, Precision::Fast, pool);
  ASSERT_NE(fused.packed(), nullptr);
  EXPECT_EQ(fused.rows(), 64);
  const auto x = test::gaussian(3 * 512, 8);
  std::vector<float> y(3 * 64), part(3 * 32);
  fused.forward(x.data(), 512, 3, y.data(), 64, pool, Precision::Fast, scratch);
  int64_t off = 0;
  for (const TensorView* t : {&q.view, &k.view, &v.view}) {
    const Linear alone({*t}, Precision::Fast, pool);
    alone.forward(x.data(), 512, 3, part.data(), t->rows(), pool, Precision::Fast, scratch);
    for (int64_t tok = 0; tok < 3; ++tok)
      for (int64_t r = 0; r < t->rows(); ++r)
        ASSERT_EQ(part[tok * t->rows() + r], y[tok * 64 + off + r]) << t->name << " row " << r;
    off += t->rows();
  }
  // Mixed types are packed separately (and a Q5_1 part is left as it is) and still give the
  // stacked product.
  test::TestMatrix k8(DType::Q8_0, 16, 512, 2), v16(DType::Q5_1, 16, 512, 4);
  const Linear mixed({q.view, k8.view, v16.view}, Precision::Fast, pool);
  EXPECT_EQ(mixed.packed(), nullptr);
  std::vector<float> ym(64), yq(32), yk(16), yv(16);
  mixed.forward(x.data(), 512, 1, ym.data(), 64, pool, Precision::Fast, scratch);
  Linear({q.view}, Precision::Fast, pool)
      .forward(x.data(), 512, 1, yq.data(), 32, pool, Precision::Fast, scratch);
  Linear({k8.view}, Precision::Fast, pool)
      .forward(x.data(), 512, 1, yk.data(), 16, pool, Precision::Fast, scratch);
  matmul(v16.view, x.data(), 512, 1, yv.data(), 16, pool, Precision::Fast, scratch);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(ym[48 + r], yv[r]);
  for (int r = 0; r < 32; ++r) EXPECT_EQ(ym[r], yq[r]);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(ym[32 + r], yk[r]);
}

TEST_F(PackedProduct, OtherIsaFallsBackToTheFileRows) {
  ThreadPool pool(1);
  MatmulScratch scratch;
  test::TestMatrix m(DType::Q4_0, 16, 256, 6);
  const Linear lin({m.view}, Precision::Fast, pool);
  ASSERT_NE(lin.packed(), nullptr);
  const auto x = test::gaussian(256, 2);
  std::vector<float> y(16), want(16);
  force_isa("scalar");
  lin.forward(x.data(), 256, 1, y.data(), 16, pool, Precision::Fast, scratch);
  matmul(m.view, x.data(), 256, 1, want.data(), 16, pool, Precision::Fast, scratch);
  EXPECT_EQ(y, want);
}

}  // namespace
}  // namespace ferrum::kernels::packed_test
