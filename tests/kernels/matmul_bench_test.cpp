// Micro-benchmark of the matmul kernels (disabled by default; run with
// --gtest_also_run_disabled_tests --gtest_filter='*Bench*'). Prints GFLOP/s and weight GB/s for
// 2048x2048 and 8192x2048 (rows x inputs) per type at n_tok 1 and 64, for each ISA the CPU has;
// "scalar" is the naive baseline measured in the same run. FERRUM_BENCH_TYPES and
// FERRUM_BENCH_ISAS (comma lists) shorten a run; FERRUM_BENCH_TOKENS (a comma list, e.g. 16,512)
// replaces the token counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed.h"

namespace ferrum::kernels {
namespace {

// Fastest single call of f over ~0.3 s (after a warm-up call).
template <typename F>
double seconds_per_call(F&& f, ThreadPool& pool) {
  // One thread: its CPU time (robust on a shared machine); more threads: wall time.
  const clockid_t clk = pool.size() == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  auto now = [clk] {
    timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  };
  f();  // warm-up
  // Fastest single call over ~0.3 s: the machine is shared, the minimum is the least disturbed.
  double best = 1e30;
  for (const double start = now(); now() - start < 0.3;) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

TEST(MatmulBench, DISABLED_Bench) {
  const std::string saved = active_isa();
  const char* nth = std::getenv("FERRUM_BENCH_THREADS");
  ThreadPool pool(nth ? std::atoi(nth) : 0);
  MatmulScratch scratch;
  const char* only = std::getenv("FERRUM_BENCH_TYPES");  // e.g. "Q4_0,Q4_K" to shorten a run
  const char* isas = std::getenv("FERRUM_BENCH_ISAS");   // e.g. "avx2,avx2vnni"
  std::vector<int64_t> tokens = {1, 64};
  if (const char* s = std::getenv("FERRUM_BENCH_TOKENS")) {
    tokens.clear();
    for (const char* p = s; *p;) {
      char* end = nullptr;
      tokens.push_back(std::max<int64_t>(1, std::strtol(p, &end, 10)));
      p = *end == ',' ? end + 1 : end + std::strlen(end);
    }
  }
  std::printf(
      "threads %d (%s)\n| type | rows x cols | n_tok | isa | prec | ms | GFLOP/s | GB/s "
      "|\n|---|---|---|---|---|---|---|---|\n",
      pool.size(), pool.size() == 1 ? "thread CPU time" : "wall time");
  for (DType t : {DType::F32,     DType::F16,    DType::BF16,   DType::Q8_0,    DType::Q4_0,   DType::Q5_0,
                  DType::Q5_1,    DType::Q4_K,   DType::Q5_K,   DType::Q6_K,    DType::Q4_1,   DType::Q2_K,
                  DType::Q3_K,    DType::IQ4_NL, DType::IQ4_XS, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
                  DType::IQ3_XXS, DType::IQ3_S,  DType::IQ1_S,  DType::IQ1_M}) {
    if (only && !std::strstr(only, dtype_name(t))) continue;
    for (int64_t rows : {2048, 8192}) {
      test::TestMatrix m(t, rows, 2048, 3);
      for (int64_t n_tok : tokens) {
        const auto x = test::gaussian(static_cast<size_t>(n_tok * 2048), 5);
        std::vector<float> y(static_cast<size_t>(n_tok * rows));
        for (const char* isa : isa_tiers()) {
          if (!isa_supported(isa) || (isas && !std::strstr(isas, isa))) continue;
          force_isa(isa);
          for (Precision prec : {Precision::Fast, Precision::Exact}) {
            if (prec == Precision::Exact && std::string(isa) != "avx512") continue;
            // Tiers whose row-major kernels are another tier's (avx2vnni, neondot): packed only.
            if (std::string(isa) == "avx2vnni" || std::string(isa) == "neondot") continue;
            const double s = seconds_per_call(
                [&] { matmul(m.view, x.data(), 2048, n_tok, y.data(), rows, pool, prec, scratch); }, pool);
            std::printf("| %s | %ldx2048 | %ld | %s | %s | %.3f | %.1f | %.1f |\n", dtype_name(t), (long)rows,
                        (long)n_tok, isa, prec == Precision::Fast ? "fast" : "exact", s * 1e3,
                        2.0 * rows * 2048 * n_tok / s * 1e-9, m.view.nbytes / s * 1e-9);
            std::fflush(stdout);
          }
          // The 16-row packed layout (what the models use for these types on the SIMD tiers).
          if (packed_kernels_active() && packable(t, rows, 2048)) {
            const Linear lin({m.view}, Precision::Fast, pool);
            const double s = seconds_per_call(
                [&] { lin.forward(x.data(), 2048, n_tok, y.data(), rows, pool, Precision::Fast, scratch); },
                pool);
            std::printf("| %s | %ldx2048 | %ld | %s | %s | %.3f | %.1f | %.1f |\n", dtype_name(t), (long)rows,
                        (long)n_tok, (std::string(isa) + " packed").c_str(), "fast", s * 1e3,
                        2.0 * rows * 2048 * n_tok / s * 1e-9, lin.weight_bytes() / s * 1e-9);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  force_isa(saved.c_str());
}

}  // namespace
}  // namespace ferrum::kernels
