// The avx512bf16 tier: the AVX-512 tier with its BF16 products done by vdpbf16ps (AVX-512 BF16:
// Cooper Lake, Sapphire Rapids and later, Zen 4 and later). Only the BF16 kernels live here; the
// rest is avx512_kernels(), which run on AVX-512 CPUs without BF16 (Skylake-X with VNNI, Cascade
// Lake, Ice Lake) and widen BF16 by shifts to the same sums.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/bf16_tile_zmm.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed_zmm_float.h"
#include "kernels/cpu/tile_dispatch.h"

namespace ferrum::kernels {
namespace {

// 32 inputs per vdpbf16ps.
struct Dpbf16 {
  using V = __m512bh;
  static V load(const uint16_t* p, __mmask32 m) {
    return reinterpret_cast<V>(_mm512_maskz_loadu_epi16(m, p));
  }
  static __m512 madd(__m512 acc, V w, V a) { return _mm512_dpbf16_ps(acc, w, a); }
};

// acc += w . (the BF16 pair at p, broadcast to every lane), with the broadcast folded into the
// instruction's memory operand. Written in asm because clang 16 crashes (unbounded recursion in
// instruction selection) when it folds such a broadcast into vdpbf16ps itself, and with the
// broadcast kept in a register the kernel ran at 73 GFLOP/s instead of 200 (one broadcast per pair).
inline __m512 dpbf16_bcast(__m512 acc, __m512i w, const uint16_t* p) {
  asm("vdpbf16ps %[a]%{1to16%}, %[w], %[acc]"
      : [acc] "+v"(acc)
      : [w] "v"(w), [a] "m"(*reinterpret_cast<const float*>(p)));
  return acc;
}

// A packed BF16 weight vector: 2 inputs per int32 lane, 32 multiply-adds per instruction.
struct BF16Vec {
  using Act = uint16_t;
  using W = __m512i;
  static constexpr int kIn = 2;
  static W load(const uint8_t* p) { return _mm512_load_si512(p); }
  static __m512 madd(__m512 acc, W w, const uint16_t* a) { return dpbf16_bcast(acc, w, a); }
};

}  // namespace

const PackedKernels& avx512bf16_packed_kernels() {
  static const PackedKernels k = [] {
    PackedKernels v = avx512_packed_kernels();
    v.bf16 = {float_fn<BF16Vec>, kTileFloat};
    return v;
  }();
  return k;
}

const IsaKernels& avx512bf16_kernels() {
  static const IsaKernels k = [] {
    IsaKernels v = avx512_kernels();
    v.name = "avx512bf16";
    v.bf16 = tile_fn<Bf16TileOf<Dpbf16>::K>;
    v.packed = &avx512bf16_packed_kernels();
    return v;
  }();
  return k;
}

}  // namespace ferrum::kernels
