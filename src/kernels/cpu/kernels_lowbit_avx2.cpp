// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX2 (and AVX-VNNI) tiers, and the grid
// i-quants' panels with the vpmaddwd product.
#include "kernels/cpu/grid_panel_ymm.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {
namespace {

// NR panel rows x NT tokens on 256-bit registers: per super-block the int32 lanes of the row kernels,
// then their conversion and multiply-add with d * a.d.
template <int NR, int NT>
void panel_tile_ymm(const int16_t* p, const float* pd, int64_t n, const PanelActs& a, float* y, int64_t ldy) {
  const int64_t nb = n / 256;
  __m256 acc[NR][NT];
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i s[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) s[r][t] = _mm256_setzero_si256();
    for (int64_t i = 256 * b; i < 256 * (b + 1); i += 16) {
      __m256i wv[NR], av[NT];
      for (int r = 0; r < NR; ++r) wv[r] = load32(p + r * n + i);
      for (int t = 0; t < NT; ++t) av[t] = load32(a.q(t) + i);
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t) s[r][t] = _mm256_add_epi32(s[r][t], _mm256_madd_epi16(wv[r], av[t]));
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t)
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][t]), _mm256_set1_ps(pd[r * nb + b] * a.d(t)[b]),
                                    acc[r][t]);
  }
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) y[t * ldy + r] = hsum(acc[r][t]);
}

// nr rows x nt tokens through tiles of at most 2 x 2 (16 registers).
void panel_product_ymm(const int16_t* p, const float* pd, int nr, int64_t n, const PanelActs& a, int nt,
                       float* y, int64_t ldy) {
  const int64_t nb = n / 256;
  for (int t = 0; t < nt; t += 2) {
    const PanelActs at{a.act + t * a.stride, a.stride, n};
    for (int r = 0; r < nr; r += 2) {
      const int16_t* pr = p + r * n;
      const float* dr = pd + r * nb;
      float* yr = y + t * ldy + r;
      const bool two_r = r + 1 < nr, two_t = t + 1 < nt;
      if (two_r && two_t)
        panel_tile_ymm<2, 2>(pr, dr, n, at, yr, ldy);
      else if (two_r)
        panel_tile_ymm<2, 1>(pr, dr, n, at, yr, ldy);
      else if (two_t)
        panel_tile_ymm<1, 2>(pr, dr, n, at, yr, ldy);
      else
        panel_tile_ymm<1, 1>(pr, dr, n, at, yr, ldy);
    }
  }
}

}  // namespace

LowbitRows lowbit_rows_avx2() {
  LowbitRows rows = ymm_lowbit_rows();
  set_grid_panels<panel_product_ymm>(rows);
  return rows;
}

}  // namespace ferrum::kernels
