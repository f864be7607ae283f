// Row-major tile dispatch shared by the x86 tiers' kernel files: a runtime token count 1..4 (and row
// count) mapped onto the template instantiations K<NT> / K<NR, NT> whose accumulators stay in
// registers. ISA-neutral: each kernel file instantiates them with its own kernels (in its
// anonymous namespace, so no two files share an instantiation).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferrum::kernels {

// K<NT>::run(args...) for NT = nt (1..4).
template <template <int> class K, typename... Args>
void tile_dispatch(int nt, Args... args) {
  switch (nt) {
    case 1:
      return K<1>::run(args...);
    case 2:
      return K<2>::run(args...);
    case 3:
      return K<3>::run(args...);
    default:
      return K<4>::run(args...);
  }
}

// Multi-row kernels K<NR, NT>: NR rows at w + r*ws, nt tokens at act + t*as -> y[t*ldy + r].
template <template <int, int> class K, int NR>
void tile_nt(const uint8_t* w, size_t ws, int64_t n, const uint8_t* act, size_t as, int nt, float* y,
             int64_t ldy) {
  switch (nt) {
    case 1:
      return K<NR, 1>::run(w, ws, n, act, as, y, ldy);
    case 2:
      return K<NR, 2>::run(w, ws, n, act, as, y, ldy);
    case 3:
      return K<NR, 3>::run(w, ws, n, act, as, y, ldy);
    default:
      return K<NR, 4>::run(w, ws, n, act, as, y, ldy);
  }
}

// Up to four rows per call (the float tiles of the 32-register tiers).
template <template <int, int> class K>
void tile_fn(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t as, int nt, float* y,
             int64_t ldy) {
  switch (nr) {
    case 1:
      return tile_nt<K, 1>(w, ws, n, act, as, nt, y, ldy);
    case 2:
      return tile_nt<K, 2>(w, ws, n, act, as, nt, y, ldy);
    case 3:
      return tile_nt<K, 3>(w, ws, n, act, as, nt, y, ldy);
    default:
      return tile_nt<K, 4>(w, ws, n, act, as, nt, y, ldy);
  }
}

// Two rows per call, then the last one (register budgets of the quantized tiles and of 16 registers).
template <template <int, int> class K>
void tile_fn2(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t as, int nt, float* y,
              int64_t ldy) {
  for (; nr >= 2; nr -= 2, w += 2 * ws, y += 2) tile_nt<K, 2>(w, ws, n, act, as, nt, y, ldy);
  if (nr) tile_nt<K, 1>(w, ws, n, act, as, nt, y, ldy);
}

}  // namespace ferrum::kernels
