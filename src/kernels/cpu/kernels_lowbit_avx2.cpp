// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX2 (and AVX-VNNI) tiers, and the grid
// i-quants' panels with the vpmaddwd product.
#include "kernels/cpu/grid_panel_ymm.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {
namespace {

// Tile shape (rows x tokens) for 16 registers, the fastest in the micro-benchmark (64 tokens).
constexpr int YR = 3, YT = 2;

// The panel product on 256-bit registers: vpmaddwd and an add; a load is half a 32-element chunk (its
// even pairs, then its odd ones), both halves adding into the row kernels' lanes.
struct YmmDot {
  using Int = __m256i;
  static constexpr int kStep = 16;
  static Int zero() { return _mm256_setzero_si256(); }
  static Int load(const int16_t* p) { return load32(p); }
  static Int dot(Int s, Int w, Int a) { return _mm256_add_epi32(s, _mm256_madd_epi16(w, a)); }
  static __m256i lanes(Int s) { return s; }
};
template <int NR, int NT>
using PanelTileYmm = PanelTile<YmmDot, NR, NT>;

}  // namespace

LowbitRows lowbit_rows_avx2() {
  LowbitRows rows = ymm_lowbit_rows();
  set_grid_panels<panel_product<PanelTileYmm, YR, YT>>(rows);
  return rows;
}

}  // namespace ferrum::kernels
