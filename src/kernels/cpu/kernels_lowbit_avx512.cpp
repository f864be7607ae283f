// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels for the AVX-512 tier (the 256-bit kernels with its
// flags), and the grid i-quants' panels with a vpdpwssd product on 512-bit registers.
#include "kernels/cpu/grid_panel_ymm.h"
#include "kernels/cpu/kernels_lowbit_ymm.h"

namespace ferrum::kernels {
namespace {

// Tile shape (rows x tokens), the fastest in the micro-benchmark (64 tokens): more spills registers.
constexpr int ZR = 4, ZT = 3;

// The panel product on 512-bit registers: vpdpwssd on a whole 32-element chunk (the even pairs in lanes
// 0-7, the odd ones in 8-15, grid_panel.h); the two halves added once per super-block give the row
// kernels' 8 lanes.
struct ZmmDot {
  using Int = __m512i;
  static constexpr int kStep = 32;
  static Int zero() { return _mm512_setzero_si512(); }
  static Int load(const int16_t* p) { return _mm512_loadu_si512(p); }
  static Int dot(Int s, Int w, Int a) { return _mm512_dpwssd_epi32(s, w, a); }
  static __m256i lanes(Int s) {
    return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
  }
};
template <int NR, int NT>
using PanelTileZmm = PanelTile<ZmmDot, NR, NT>;

}  // namespace

LowbitRows lowbit_rows_avx512() {
  LowbitRows rows = ymm_lowbit_rows();
  set_grid_panels<panel_product<PanelTileZmm, ZR, ZT>>(rows);
  // IQ2_XS's and IQ1_M's row kernels as the AVX2 flags compile them: the same bits, and faster for one
  // token (micro-benchmark: IQ2_XS 26 against 21 GFLOP/s, IQ1_M 21 against 17; the AVX-512 build of
  // these two is slower for reasons not pinned down, the other types' is as fast or faster).
  const LowbitRows avx2 = lowbit_rows_avx2();
  rows.iq2_xs = avx2.iq2_xs;
  rows.iq1_m = avx2.iq1_m;
  return rows;
}

}  // namespace ferrum::kernels
