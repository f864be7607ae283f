// Matmul: Exact against a float64 reference on the dequantized weights, Fast close to Exact,
// every ISA path against scalar, odd shapes, row slices, argument errors.
#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "ferrum/error.h"
#include "kernel_test_util.h"
#include "kernels/cpu/kernels.h"

namespace ferrum::kernels {
namespace {

using test::TestMatrix;

const DType kTypes[] = {DType::F32,     DType::F16,    DType::BF16,  DType::Q4_0,    DType::Q4_1,
                        DType::Q5_0,    DType::Q5_1,   DType::Q8_0,  DType::Q4_K,    DType::Q5_K,
                        DType::Q6_K,    DType::Q2_K,   DType::Q3_K,  DType::IQ4_NL,  DType::IQ4_XS,
                        DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                        DType::IQ1_S,   DType::IQ1_M,  DType::MXFP4, DType::Q4_Z};

// Restores the ISA that was active when the test started.
using test::IsaGuard;

int64_t cols_for(DType t, bool odd) {
  if (dtype_info(t).block_size == 256) return odd ? 768 : 512;
  if (dtype_info(t).block_size == 32) return odd ? 96 : 512;
  return odd ? 100 : 512;  // plain types: exercises the vector tails
}

struct Problem {
  TestMatrix w;
  std::vector<float> x;
  int64_t n_tok, ldx;
  Problem(DType t, int64_t rows, int64_t cols, int64_t n_tok, uint32_t seed)
      : w(t, rows, cols, seed), n_tok(n_tok), ldx(cols + 3) {
    x = test::gaussian(static_cast<size_t>(n_tok * ldx), seed + 1);
  }
  int64_t rows() const { return w.view.rows(); }
  int64_t cols() const { return w.view.cols(); }
  std::vector<float> run(ThreadPool& pool, Precision p, MatmulScratch& s, int64_t ldy_extra = 0) const {
    const int64_t ldy = rows() + ldy_extra;
    std::vector<float> y(static_cast<size_t>(n_tok * ldy), -7.0f);
    matmul(w.view, x.data(), ldx, n_tok, y.data(), ldy, pool, p, s);
    return y;
  }
  // float64 reference and sum |w*x| (the scale of the rounding error) per output.
  void reference(std::vector<double>& ref, std::vector<double>& mag) const {
    const auto wd = w.dequantized();
    ref.assign(static_cast<size_t>(n_tok * rows()), 0.0);
    mag = ref;
    for (int64_t t = 0; t < n_tok; ++t)
      for (int64_t o = 0; o < rows(); ++o)
        for (int64_t i = 0; i < cols(); ++i) {
          const double p = double(wd[o * cols() + i]) * x[t * ldx + i];
          ref[t * rows() + o] += p;
          mag[t * rows() + o] += std::fabs(p);
        }
  }
};

TEST(Matmul, ExactMatchesFloat64Reference) {
  ThreadPool pool(3);
  MatmulScratch scratch;
  for (DType t : kTypes)
    for (bool odd : {false, true})
      for (int64_t n_tok : {1, 3, 17}) {
        Problem p(t, 37, cols_for(t, odd), n_tok, 11);
        std::vector<double> ref, mag;
        p.reference(ref, mag);
        const auto y = p.run(pool, Precision::Exact, scratch);
        for (size_t i = 0; i < ref.size(); ++i)
          ASSERT_LE(std::fabs(y[i] - ref[i]), 2e-6 * mag[i] + 1e-30)
              << dtype_name(t) << " cols " << p.cols() << " n_tok " << n_tok << " out " << i << ": " << y[i]
              << " vs " << ref[i];
      }
}

// Fast quantizes the activations to 8 bits (or BF16): relative RMS error against Exact per type.
TEST(Matmul, FastCloseToExact) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (DType t : kTypes) {
    const double bound = t == DType::F32 || t == DType::F16 ? 1e-6 : t == DType::BF16 ? 3e-3 : 9e-3;
    for (int64_t n_tok : {1, 5, 70}) {
      Problem p(t, 45, cols_for(t, false), n_tok, 21);
      const auto exact = p.run(pool, Precision::Exact, scratch);
      const auto fast = p.run(pool, Precision::Fast, scratch);
      double e = 0, s = 0;
      for (size_t i = 0; i < exact.size(); ++i) {
        e += (double(fast[i]) - exact[i]) * (double(fast[i]) - exact[i]);
        s += double(exact[i]) * exact[i];
      }
      const double rel = std::sqrt(e / s);
      EXPECT_LT(rel, bound) << dtype_name(t) << " n_tok " << n_tok;
      if (n_tok == 5) std::printf("  %-5s fast vs exact rel rms %.2e\n", dtype_name(t), rel);
    }
  }
}

// Every SIMD path the CPU has gives the scalar results (integer dots are exact; only the order of
// the float sums differs).
TEST(Matmul, IsaPathsAgreeWithScalar) {
  IsaGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::vector<const char*> isas;
  for (const char* isa : test::supported_tiers())
    if (std::string(isa) != "scalar") isas.push_back(isa);
  int checked = 0;
  for (DType t : kTypes)
    for (bool odd : {false, true})
      for (int64_t n_tok : {1, 3, 17}) {
        const Problem p(t, 29, cols_for(t, odd), n_tok, 31);
        std::vector<double> r64, mag;
        if (!isas.empty()) p.reference(r64, mag);
        for (Precision prec : {Precision::Exact, Precision::Fast}) {
          force_isa("scalar");
          ASSERT_STREQ(active_isa(), "scalar");
          const auto ref = p.run(pool, prec, scratch);
          for (const char* isa : isas) {
            force_isa(isa);
            ASSERT_STREQ(active_isa(), isa);
            const auto y = p.run(pool, prec, scratch);
            for (size_t i = 0; i < y.size(); ++i)
              ASSERT_LE(std::fabs(y[i] - ref[i]), 3e-6 * mag[i] + 1e-30)
                  << isa << " " << dtype_name(t) << (prec == Precision::Fast ? " fast" : " exact") << " cols "
                  << p.cols() << " n_tok " << n_tok << " out " << i << ": " << y[i] << " vs scalar "
                  << ref[i];
            ++checked;
          }
        }
      }
  std::printf("  %d ISA/type/shape combinations checked against scalar\n", checked);
}

TEST(Matmul, RowSliceAndOutputStride) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (DType t : {DType::Q4_K, DType::Q8_0, DType::F16}) {
    for (Precision prec : {Precision::Exact, Precision::Fast}) {
      Problem p(t, 50, cols_for(t, false), 6, 41);
      const auto full = p.run(pool, prec, scratch);
      const int64_t rb = 7, re = 41, ldy = 40;
      std::vector<float> y(static_cast<size_t>(6 * ldy), -7.0f);
      matmul_rows(p.w.view, rb, re, p.x.data(), p.ldx, 6, y.data(), ldy, pool, prec, scratch);
      for (int64_t tk = 0; tk < 6; ++tk) {
        for (int64_t o = 0; o < re - rb; ++o)
          ASSERT_EQ(y[tk * ldy + o], full[tk * 50 + rb + o]) << dtype_name(t);
        for (int64_t o = re - rb; o < ldy; ++o) ASSERT_EQ(y[tk * ldy + o], -7.0f) << "wrote past the slice";
      }
    }
  }
}

// A token's outputs are bitwise the same alone and among others, on every tier and for every type
// (the row kernels too: a float tile once summed a lone token in two interleaved accumulators).
TEST(Matmul, TokenResultDoesNotDependOnBatch) {
  IsaGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    for (DType t : kTypes)
      for (Precision prec : {Precision::Exact, Precision::Fast}) {
        Problem all(t, 21, cols_for(t, true), 5, 61);
        const auto y = all.run(pool, prec, scratch);
        for (int64_t tk = 0; tk < 5; ++tk) {
          std::vector<float> one(21, -7.0f);
          matmul(all.w.view, all.x.data() + tk * all.ldx, all.ldx, 1, one.data(), 21, pool, prec, scratch);
          ASSERT_EQ(std::memcmp(one.data(), &y[tk * 21], 21 * sizeof(float)), 0)
              << isa << " " << dtype_name(t) << (prec == Precision::Fast ? " fast" : " exact") << " token "
              << tk;
        }
      }
  }
}

// The grid i-quants (IQ1 too) with many tokens go through decoded panels (grid_panel.h): each token's outputs
// are still the row kernels' bits (alone: the one-token kernel), over row and token tails (37 rows: 16 + 16
// + 5; 70 tokens: a group of 64 and one of 6, odd tiles).
TEST(Matmul, GridPanelsGiveTheRowKernelsBits) {
  IsaGuard guard;
  ThreadPool pool(2);
  MatmulScratch scratch;
  int checked = 0;
  for (const char* isa : test::supported_tiers()) {
    force_isa(isa);
    for (DType t : {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S,
                    DType::IQ1_M}) {
      Problem all(t, 37, 768, 70, 71);
      const auto y = all.run(pool, Precision::Fast, scratch);
      for (int64_t tk = 0; tk < 70; tk += 3) {
        std::vector<float> one(37, -7.0f);
        matmul(all.w.view, all.x.data() + tk * all.ldx, all.ldx, 1, one.data(), 37, pool, Precision::Fast,
               scratch);
        for (int o = 0; o < 37; ++o)
          ASSERT_EQ(one[o], y[tk * 37 + o]) << isa << " " << dtype_name(t) << " token " << tk << " row " << o;
      }
      ++checked;
    }
  }
  std::printf("  %d ISA/type combinations checked\n", checked);
}

TEST(Matmul, ThreadCountsGiveSameResult) {
  MatmulScratch scratch;
  Problem p(DType::Q4_0, 67, 256, 9, 51);
  ThreadPool p1(1), p3(3);
  for (Precision prec : {Precision::Exact, Precision::Fast})
    EXPECT_EQ(p.run(p1, prec, scratch), p.run(p3, prec, scratch));
}

TEST(Matmul, ScratchIsReusedWithoutGrowing) {
  ThreadPool pool(2);
  MatmulScratch scratch;
  Problem p(DType::Q6_K, 16, 512, 8, 61);
  p.run(pool, Precision::Fast, scratch);
  p.run(pool, Precision::Exact, scratch);
  const auto* act = scratch.act.data();
  const auto* rows = scratch.rows.data();
  p.run(pool, Precision::Fast, scratch);
  p.run(pool, Precision::Exact, scratch);
  EXPECT_EQ(act, scratch.act.data());
  EXPECT_EQ(rows, scratch.rows.data());
}

TEST(Matmul, BadArgumentsThrow) {
  ThreadPool pool(1);
  MatmulScratch s;
  TestMatrix m(DType::Q4_0, 4, 64, 1);
  std::vector<float> x(64 * 2), y(8);
  TensorView v = m.view;
  EXPECT_THROW(matmul_rows(v, 2, 5, x.data(), 64, 1, y.data(), 4, pool, Precision::Fast, s), Error);
  EXPECT_THROW(matmul(v, x.data(), 10, 2, y.data(), 4, pool, Precision::Fast, s), Error);
  v.nbytes -= 1;
  EXPECT_THROW(matmul(v, x.data(), 64, 1, y.data(), 4, pool, Precision::Exact, s), Error);
  v = m.view;
  v.type = DType::TQ1_0;
  EXPECT_THROW(matmul(v, x.data(), 64, 1, y.data(), 4, pool, Precision::Exact, s), Error);
  v = m.view;
  v.ne[0] = 60;  // not a multiple of the block size
  EXPECT_THROW(matmul(v, x.data(), 64, 1, y.data(), 4, pool, Precision::Fast, s), Error);
  EXPECT_THROW(force_isa("sse9"), Error);
  try {
    v.name = "blk.3.ffn_up.weight";
    matmul(v, x.data(), 64, 1, y.data(), 4, pool, Precision::Fast, s);
    FAIL() << "no error";
  } catch (const Error& e) {  // the message names the tensor and what was expected
    EXPECT_NE(std::string(e.what()).find("blk.3.ffn_up.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("block size 32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrum::kernels

namespace ferrum::kernels {
namespace {

// The activation quantizers of every ISA write the same bytes (ties round to even everywhere).
TEST(Matmul, ActivationQuantizersIdenticalAcrossIsas) {
  auto x = test::gaussian(1024, 71);
  for (int j = 0; j < 32; ++j) x[j] = j == 0 ? 127.0f : 0.5f * static_cast<float>(j - 16);  // exact ties
  for (int j = 256; j < 512; ++j) x[j] = 0.0f;                                              // zero blocks
  const IsaKernels& s = scalar_kernels();
  std::vector<uint8_t> ref32(q8act_bytes(1024)), ref_k(4 * sizeof(BlockQ8_K));
  s.quantize_q8_1f(x.data(), ref32.data(), 1024);
  s.quantize_q8_k(x.data(), reinterpret_cast<BlockQ8_K*>(ref_k.data()), 1024);
  const auto* q = reinterpret_cast<const int8_t*>(ref32.data());
  EXPECT_EQ(q[15], 0);  // -0.5
  EXPECT_EQ(q[19], 2);  // 1.5
  EXPECT_EQ(q[21], 2);  // 2.5
  for (const char* isa : test::supported_tiers()) {
    const IsaKernels& k = *isa_kernels(isa);
    std::vector<uint8_t> a32(ref32.size()), ak(ref_k.size());
    k.quantize_q8_1f(x.data(), a32.data(), 1024);
    k.quantize_q8_k(x.data(), reinterpret_cast<BlockQ8_K*>(ak.data()), 1024);
    EXPECT_EQ(a32, ref32) << isa;
    EXPECT_EQ(ak, ref_k) << isa;
  }
}

}  // namespace
}  // namespace ferrum::kernels

namespace ferrum::kernels {
namespace {

// The Exact path's F16 conversion of every ISA equals the bit-exact core conversion (all 65536
// values; NaNs only need to stay NaN).
TEST(Matmul, F16ConversionExactOnEveryIsa) {
  std::vector<uint16_t> h(65536);
  for (int i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> ref(65536), out(65536);
  dequantize_row(DType::F16, h.data(), ref.data(), 65536);
  for (const char* isa : test::supported_tiers()) {
    const IsaKernels& k = *isa_kernels(isa);
    k.f16_to_f32(h.data() + 1, out.data() + 1, 65535);  // odd offset/length: exercises the tails
    for (int i = 1; i < 65536; ++i) {
      if (std::isnan(ref[i])) {
        ASSERT_TRUE(std::isnan(out[i])) << isa << " " << i;
        continue;
      }
      uint32_t a, b;
      std::memcpy(&a, &out[i], 4);
      std::memcpy(&b, &ref[i], 4);
      ASSERT_EQ(a, b) << isa << " half " << i;
    }
  }
}

}  // namespace
}  // namespace ferrum::kernels

namespace ferrum::kernels {
namespace {

// FERRUM_ISA picks the kernels at first use: re-run this test binary with it set.
TEST(Matmul, EnvironmentSelectsIsa) {
  if (const char* want = std::getenv("FERRUM_TEST_EXPECT_ISA")) {
    EXPECT_STREQ(active_isa(), want);
    return;
  }
  const std::string self = test::self_command();
  const std::string filter = " --gtest_filter=Matmul.EnvironmentSelectsIsa >/dev/null 2>&1";
  EXPECT_EQ(std::system(("FERRUM_ISA=scalar FERRUM_TEST_EXPECT_ISA=scalar " + self + filter).c_str()), 0);
  EXPECT_NE(std::system(("FERRUM_ISA=scalar FERRUM_TEST_EXPECT_ISA=other " + self + filter).c_str()), 0)
      << "the check itself must be able to fail";
  // A name that is no tier of this build is refused too.
  EXPECT_NE(std::system(("FERRUM_ISA=sse9 FERRUM_TEST_EXPECT_ISA=sse9 " + self + filter).c_str()), 0);
  for (const std::string isa : isa_tiers()) {
    const std::string run = "FERRUM_ISA=" + isa + " FERRUM_TEST_EXPECT_ISA=" + isa + " " + self + filter;
    // A tier the CPU lacks is refused at start (the process fails), never silently replaced.
    if (isa_supported(isa.c_str()))
      EXPECT_EQ(std::system(run.c_str()), 0) << isa;
    else
      EXPECT_NE(std::system(run.c_str()), 0) << isa;
  }
}

}  // namespace
}  // namespace ferrum::kernels
