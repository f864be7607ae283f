// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX2 (and AVX-VNNI) tiers, and the grid
// i-quants' panels with the vpmaddwd product.
#include "kernels/cpu/grid_panel_ymm.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {
namespace {

// Tile shape (rows x tokens) for 16 registers, the fastest in the micro-benchmark (64 tokens).
constexpr int YR = 3, YT = 2;

// NR panel rows x NT tokens on 256-bit registers: per super-block the int32 lanes of the row kernels,
// then their conversion and multiply-add with d * a.d.
template <int NR, int NT>
struct PanelTileYmm {
  static void run(const int16_t* p, const float* pd, int64_t n, const PanelActs& a, float* y, int64_t ldy) {
    const int64_t nb = n / 256;
    __m256 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      __m256i s[NR][NT];
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t) s[r][t] = _mm256_setzero_si256();
      static_for<16>([&](auto h) {
        const int64_t i = 256 * b + 16 * h;
        __m256i wv[NR], av[NT];
        for (int r = 0; r < NR; ++r) wv[r] = load32(p + r * n + i);
        for (int t = 0; t < NT; ++t) av[t] = load32(a.q(t) + i);
        for (int r = 0; r < NR; ++r)
          for (int t = 0; t < NT; ++t) s[r][t] = _mm256_add_epi32(s[r][t], _mm256_madd_epi16(wv[r], av[t]));
      });
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t)
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][t]), _mm256_set1_ps(pd[r * nb + b] * a.d(t)[b]),
                                      acc[r][t]);
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) y[t * ldy + r] = hsum(acc[r][t]);
  }
};

}  // namespace

LowbitRows lowbit_rows_avx2() {
  LowbitRows rows = ymm_lowbit_rows();
  set_grid_panels<panel_product<PanelTileYmm, YR, YT>>(rows);
  return rows;
}

}  // namespace ferrum::kernels
