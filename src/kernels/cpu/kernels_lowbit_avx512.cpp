// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX-512 tier (the 256-bit kernels with its
// flags), and the grid i-quants' panels with a vpdpwssd product on 512-bit registers.
#include "kernels/cpu/grid_panel_ymm.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {
namespace {

// NR panel rows x NT tokens: a register holds a whole 32-element chunk (the even pairs in lanes 0-7,
// the odd ones in 8-15, grid_panel.h), so the two halves are added once per super-block to give the
// row kernels' 8 lanes.
// Tile shape (rows x tokens), the fastest in the micro-benchmark (64 tokens): more spills registers.
constexpr int ZR = 4, ZT = 3;

// NR panel rows x NT tokens: a register holds a whole 32-element chunk (the even pairs in lanes 0-7,
// the odd ones in 8-15, grid_panel.h), so the two halves are added once per super-block to give the
// row kernels' 8 lanes.
template <int NR, int NT>
struct PanelTileZmm {
  static void run(const int16_t* p, const float* pd, int64_t n, const PanelActs& a, float* y, int64_t ldy) {
    const int64_t nb = n / 256;
    __m256 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      __m512i s[NR][NT];
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t) s[r][t] = _mm512_setzero_si512();
      static_for<8>([&](auto g) {
        const int64_t i = 256 * b + 32 * g;
        __m512i wv[NR], av[NT];
        for (int r = 0; r < NR; ++r) wv[r] = _mm512_loadu_si512(p + r * n + i);
        for (int t = 0; t < NT; ++t) av[t] = _mm512_loadu_si512(a.q(t) + i);
        for (int r = 0; r < NR; ++r)
          for (int t = 0; t < NT; ++t) s[r][t] = _mm512_dpwssd_epi32(s[r][t], wv[r], av[t]);
      });
      for (int r = 0; r < NR; ++r)
        for (int t = 0; t < NT; ++t) {
          const __m256i lanes =
              _mm256_add_epi32(_mm512_castsi512_si256(s[r][t]), _mm512_extracti64x4_epi64(s[r][t], 1));
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_set1_ps(pd[r * nb + b] * a.d(t)[b]),
                                      acc[r][t]);
        }
    }
    for (int r = 0; r < NR; ++r)
      for (int t = 0; t < NT; ++t) y[t * ldy + r] = hsum(acc[r][t]);
  }
};

}  // namespace

LowbitRows lowbit_rows_avx512() {
  LowbitRows rows = ymm_lowbit_rows();
  set_grid_panels<panel_product<PanelTileZmm, ZR, ZT>>(rows);
  // IQ2_XS's row kernel as the AVX2 flags compile it: the same bits, and faster for one token (25 against
  // 19 GFLOP/s in the micro-benchmark; with AVX-512 flags the compiler fuses its adds into vpdpwssd, and
  // that build is slower here for reasons not pinned down).
  rows.iq2_xs = lowbit_rows_avx2().iq2_xs;
  return rows;
}

}  // namespace ferrum::kernels
