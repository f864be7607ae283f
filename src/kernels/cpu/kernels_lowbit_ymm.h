// Q2_K, Q3_K, IQ4_XS and grid i-quant row kernels on 256-bit registers, included by kernels_lowbit_avx2.cpp
// and kernels_lowbit_avx512.cpp (compiled with each tier's flags). Per super-block the weight levels are
// unpacked once into eight 32-byte chunks (elements 32g..32g+31, the order of the Q8_K activations) and
// reused by every token of the tile: maddubs (u8 levels x s8 activations -> i16 pairs, no saturation for
// these ranges), then madd with the sub-block scales (-> i32). Everything here has internal linkage, so the
// two tiers' instantiations never mix.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "core/quant_iq_fields.h"
#include "kernels/cpu/kernels_lowbit.h"
#include "kernels/cpu/static_for.h"

namespace ferrum::kernels {
namespace {  // internal linkage: one copy per tier's translation unit

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Scales of the two 16-element sub-blocks of a chunk: lo in the low lane, hi in the high (i16).
inline __m256i lane_scales(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)), _mm_set1_epi16(static_cast<int16_t>(lo)));
}

// Chunk g = 4c + j of Q2_K / Q3_K: the two bits at 2j of the 32 bytes at qs + 32c.
inline __m256i low2(const uint8_t* qs, int g) {
  const __m256i raw = load32(qs + 32 * (g / 4));
  return _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(2 * (g % 4))), _mm256_set1_epi8(3));
}

// Per super-block weights of one row, unpacked: levels, scale vectors, per-token step.
struct Q2K {
  using Block = BlockQ2_K;
  __m256i q[8], sc[8], mins;
  float d, dmin;
  void load(const Block& b) {
    for (int g = 0; g < 8; ++g) {
      q[g] = low2(b.qs, g);
      sc[g] = lane_scales(b.scales[2 * g] & 0xF, b.scales[2 * g + 1] & 0xF);
    }
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0F)));
    d = f16_to_f32(b.d);
    dmin = f16_to_f32(b.dmin);
  }
  // acc += d*a.d * sum_k sc_k (q.a)_k; accm += dmin*a.d * sum_k m_k bsums_k.
  void dot(const BlockQ8_K& a, __m256& acc, __m256& accm) const {
    __m256i s = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g)
      s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], load32(a.qs + 32 * g)), sc[g]));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * a.d), acc);
    const __m256i ms = _mm256_madd_epi16(load32(a.bsums), mins);
    accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(dmin * a.d), accm);
  }
};

struct Q3K {
  using Block = BlockQ3_K;
  __m256i q[8], sc[8], sc16;
  float d;
  void load(const Block& b) {
    uint8_t s[16];
    q3k_scales(b.scales, s);
    const __m256i hm = load32(b.hmask);
    for (int g = 0; g < 8; ++g) {
      // Third bit: bit g of each hmask byte (g = 4c + j).
      const __m256i h = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(g)), _mm256_set1_epi8(1));
      q[g] = _mm256_or_si256(low2(b.qs, g), _mm256_slli_epi16(h, 2));
      sc[g] = lane_scales(s[2 * g] - 32, s[2 * g + 1] - 32);
    }
    sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))),
                            _mm256_set1_epi16(32));
    d = f16_to_f32(b.d);
  }
  // acc += d*a.d * sum_k (sc_k - 32) ((q.a)_k - 4 bsums_k).
  void dot(const BlockQ8_K& a, __m256& acc, __m256&) const {
    __m256i s = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g)
      s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(q[g], load32(a.qs + 32 * g)), sc[g]));
    const __m256i off = _mm256_madd_epi16(load32(a.bsums), sc16);
    s = _mm256_sub_epi32(s, _mm256_slli_epi32(off, 2));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * a.d), acc);
  }
};

// v holds group j's sign byte in bytes 8j..8j+7: a negative byte where bit j % 8 of it is set, else
// +1, for vpsignb. -(2^k) has its top bit set and 0 | 1 is +1; no compare, which AVX-512 builds
// would turn into mask-register moves.
inline __m256i signs_of(__m256i v) {
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_or_si256(_mm256_sub_epi8(_mm256_setzero_si256(), _mm256_and_si256(v, bit)),
                         _mm256_set1_epi8(1));
}

// The signs of 4 groups of 8 values for vpsignb, from their sign bytes first..first + 3 of each lane
// of `bytes` (both lanes alike): negative where bit i of group j's byte is set (value 8j + i), else +1.
inline __m256i group_signs(__m256i bytes, int first = 0) {
  const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                       3, 3, 3, 3, 3, 3, 3, 3);
  return signs_of(
      _mm256_shuffle_epi8(bytes, _mm256_add_epi8(sel, _mm256_set1_epi8(static_cast<char>(first)))));
}

// The same from the 4 sign bytes in x (group j in byte j).
inline __m256i signs_from_bits(uint32_t x) {
  return group_signs(_mm256_set1_epi32(static_cast<int>(x)));
}

// Grid i-quants whose decode(block, f) gives each sub-block's levels, ±1 signs (carried by the
// activations) and i16 scales: load() keeps them for a tile's tokens; a lone token (decode) takes
// each sub-block's dot product as it is decoded (fused), nothing stored.
template <class W>
struct GridRows {
  __m256i mag[8], sgn[8], sc[8];
  float d;
  static __m256i sub_dot(__m256i mag, __m256i sgn, __m256i sc, const int8_t* a) {
    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, _mm256_sign_epi8(load32(a), sgn)), sc);
    // An empty asm that "changes" p: each sub-block's product stays where it is decoded. Without it
    // clang reorders the decoding and the products of a super-block and the one-token kernels run
    // slower (micro-benchmark, 1 token: IQ3_XXS 17.5 -> 23 GFLOP/s, IQ3_S 18.7 -> 21, IQ2_XS 24 -> 26.5).
    asm("" : "+x"(p));
    return p;
  }
  template <class Block>
  void load(const Block& b) {
    d = W::decode(b, [&](int g, __m256i m, __m256i s, __m256i c) { mag[g] = m, sgn[g] = s, sc[g] = c; });
  }
  // acc += D*a.d * sum_k scale_k (levels . a)_k. Two partial sums: where the compiler fuses the
  // vpmaddwd and the add into one AVX512-VNNI vpdpwssd, one sum would be a chain of 8 of its latency.
  void dot(const BlockQ8_K& a, __m256& acc, __m256&) const {
    __m256i s[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    static_for<8>([&](auto g) {
      s[g % 2] = _mm256_add_epi32(s[g % 2], sub_dot(mag[g], sgn[g], sc[g], a.qs + 32 * g));
    });
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[0], s[1])), _mm256_set1_ps(d * a.d), acc);
  }
  template <class Block>
  static void fused(const Block& b, const BlockQ8_K& a, __m256& acc) {
    __m256i s[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    const float dd = W::decode(b, [&](int g, __m256i m, __m256i sg, __m256i c) {
      s[g % 2] = _mm256_add_epi32(s[g % 2], sub_dot(m, sg, c, a.qs + 32 * g));
    });
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[0], s[1])), _mm256_set1_ps(dd * a.d), acc);
  }
};

// The eighth sign bit of each byte of s (7 sign bits, bit 7 clear): their parity, so that every
// group has an even number of minus signs (IQ2_XXS, IQ2_XS, IQ3_XXS), from two nibble lookups.
inline __m256i with_parity(__m256i s) {
  const __m256i odd = _mm256_setr_epi8(0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1,
                                       1, 0, 0, 1, 0, 1, 1, 0);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(odd, _mm256_and_si256(s, m4)),
                                     _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(s, 4), m4)));
  return _mm256_or_si256(s, _mm256_slli_epi16(p, 7));  // p is 0 or 1 per byte: bit 7 of the same byte
}

// IQ2_XS / IQ2_S scales: the 16 4-bit fields as 2s + 1 bytes (sub-block g's at 2g and 2g + 1), in
// both lanes; iq2_scale_pair<g> gives sub-block g's two as int16, the first 16 values' in the low lane.
inline __m256i iq2_scales(const uint8_t* sc) {
  const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)), m4 = _mm_set1_epi8(0x0F);
  __m128i s16 = _mm_unpacklo_epi8(_mm_and_si128(s8, m4), _mm_and_si128(_mm_srli_epi16(s8, 4), m4));
  s16 = _mm_add_epi8(_mm_add_epi8(s16, s16), _mm_set1_epi8(1));
  return _mm256_broadcastsi128_si256(s16);
}
template <int g>
inline __m256i iq2_scale_pair(__m256i scales) {
  constexpr char lo = static_cast<char>(2 * g), hi = static_cast<char>(2 * g + 1), z = -128;
  return _mm256_shuffle_epi8(
      scales, _mm256_setr_epi8(lo, z, lo, z, lo, z, lo, z, lo, z, lo, z, lo, z, lo, z, hi, z, hi, z, hi, z,
                               hi, z, hi, z, hi, z, hi, z, hi, z));
}

// IQ2_XS: per group of 8 a u16 of a 9-bit grid index and 7 sign bits. The 32 groups' sign bytes in
// one vector (the parity bit added for all at once), not worked out group by group in scalar code:
// decoding, not the dot products, is what a one-token pass spends its time on.
struct IQ2XS : GridRows<IQ2XS> {
  using Block = BlockIQ2_XS;
  // f(g, levels, signs, scales) for each sub-block g; returns the super-block's factor.
  template <class F>
  static float decode(const Block& b, F&& f) {
    const __m256i q0 = load32(b.qs), q1 = load32(b.qs + 16);
    // Groups 0-31's sign bits as bytes, in order (packus interleaves the lanes; the permute undoes it).
    const __m256i s7 = _mm256_permute4x64_epi64(
        _mm256_packus_epi16(_mm256_srli_epi16(q0, 9), _mm256_srli_epi16(q1, 9)), 0xD8);
    const __m256i signs = with_parity(s7);
    // Sign bytes 0-15 and 16-31 in both lanes, for in-lane byte shuffles.
    const __m256i signs_lo = _mm256_permute2x128_si256(signs, signs, 0x00),
                  signs_hi = _mm256_permute2x128_si256(signs, signs, 0x11);
    const __m256i scales = iq2_scales(b.scales);
    // Grid indices as int32, 8 groups (2 sub-blocks) per vector.
    const __m256i m9 = _mm256_set1_epi32(511);
    __m256i idx[4];
    for (int h = 0; h < 4; ++h)
      idx[h] = _mm256_and_si256(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 8 * h))), m9);
    const auto* grid = reinterpret_cast<const long long*>(iq_grids::kIQ2XS);
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      const __m128i i4 =
          g % 2 == 0 ? _mm256_castsi256_si128(idx[g / 2]) : _mm256_extracti128_si256(idx[g / 2], 1);
      const __m256i mag = _mm256_i32gather_epi64(grid, i4, 8);
      f(g, mag, group_signs(g < 4 ? signs_lo : signs_hi, 4 * (g % 4)), iq2_scale_pair<g>(scales));
    });
    return 0.125f * f16_to_f32(b.d);
  }
};

// IQ2_S: per group of 8 a 10-bit grid index (8 bits in qs, 2 in qh) and an explicit sign byte; IQ2_XS's
// scales. A sub-block's 4 grid entries in one gather.
struct IQ2S : GridRows<IQ2S> {
  using Block = BlockIQ2_S;
  template <class F>
  static float decode(const Block& b, F&& f) {
    const __m256i scales = iq2_scales(b.scales);
    const __m128i shift = _mm_setr_epi32(0, 2, 4, 6), three = _mm_set1_epi32(3);
    const auto* grid = reinterpret_cast<const long long*>(iq_grids::kIQ2S);
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      uint32_t low, signs;
      std::memcpy(&low, b.qs + 4 * g, 4);
      std::memcpy(&signs, b.qs + 32 + 4 * g, 4);
      const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(b.qh[g]), shift), three);
      const __m128i idx =
          _mm_or_si128(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(low))), _mm_slli_epi32(high, 8));
      f(g, _mm256_i32gather_epi64(grid, idx, 8), signs_from_bits(signs), iq2_scale_pair<g>(scales));
    });
    return 0.125f * f16_to_f32(b.d);
  }
};

// IQ2_XXS / IQ3_XXS: each sub-block's u32 of 4 x 7 sign bits and a 4-bit scale (aux, 8 of them in a
// vector): the sign bytes of the 4 groups in each dword (parity added), and the scales 2s + 1 as two
// equal int16 per dword.
struct AuxFields {
  __m256i signs, scales;
  explicit AuxFields(__m256i aux) {
    const __m256i m7 = _mm256_set1_epi32(0x7F);
    __m256i b = _mm256_and_si256(aux, m7);
    b = _mm256_or_si256(b, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(aux, 7), m7), 8));
    b = _mm256_or_si256(b, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(aux, 14), m7), 16));
    b = _mm256_or_si256(b, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(aux, 21), m7), 24));
    signs = with_parity(b);
    const __m256i s =
        _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(aux, 28), 1), _mm256_set1_epi32(1));
    scales = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
  }
  // Sub-block g's signs for vpsignb and its scale in every int16.
  __m256i sgn(int g) const { return group_signs(_mm256_permutevar8x32_epi32(signs, _mm256_set1_epi32(g))); }
  __m256i sc(int g) const { return _mm256_permutevar8x32_epi32(scales, _mm256_set1_epi32(g)); }
};

// IQ2_XXS: per sub-block 4 grid indices (bytes) then aux; a sub-block's 4 grid entries in one gather.
struct IQ2XXS : GridRows<IQ2XXS> {
  using Block = BlockIQ2_XXS;
  template <class F>
  static float decode(const Block& b, F&& f) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs);
    // The odd dwords of the 8 qwords: aux of sub-blocks 0-7 (shuffle_ps picks per lane, the permute orders).
    const __m256 lo = _mm256_castsi256_ps(load32(q)), hi = _mm256_castsi256_ps(load32(q + 32));
    const AuxFields aux(_mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
    const auto* grid = reinterpret_cast<const long long*>(iq_grids::kIQ2XXS);
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      uint32_t idx;
      std::memcpy(&idx, q + 8 * g, 4);
      f(g, _mm256_i32gather_epi64(grid, _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(idx))), 8),
        aux.sgn(g), aux.sc(g));
    });
    return 0.125f * f16_to_f32(b.d);
  }
};

// IQ3_XXS: 8 grid indices (bytes) per sub-block, then the 8 aux; a sub-block's 8 entries in one gather.
struct IQ3XXS : GridRows<IQ3XXS> {
  using Block = BlockIQ3_XXS;
  template <class F>
  static float decode(const Block& b, F&& f) {
    const AuxFields aux(load32(b.qs + 64));
    const auto* grid = reinterpret_cast<const int*>(iq_grids::kIQ3XXS);
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      const __m256i idx =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * g)));
      f(g, _mm256_i32gather_epi32(grid, idx, 4), aux.sgn(g), aux.sc(g));
    });
    return 0.25f * f16_to_f32(b.d);
  }
};

// IQ3_S: per 4 values a 9-bit grid index (8 bits in qs, the ninth in qh), explicit sign bytes, a
// 4-bit scale per 32. A sub-block's 8 grid entries in one gather.
struct IQ3S : GridRows<IQ3S> {
  using Block = BlockIQ3_S;
  template <class F>
  static float decode(const Block& b, F&& f) {
    const auto* grid = reinterpret_cast<const int*>(iq_grids::kIQ3S);
    const __m256i bit_k = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1);
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.qh[g]), bit_k), one);
      const __m256i idx = _mm256_or_si256(
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * g))),
          _mm256_slli_epi32(high, 8));
      uint32_t signs;
      std::memcpy(&signs, b.signs + 4 * g, 4);
      f(g, _mm256_i32gather_epi32(grid, idx, 4), signs_from_bits(signs),
        _mm256_set1_epi16(static_cast<int16_t>(2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 0xF) + 1)));
    });
    return f16_to_f32(b.d);
  }
};

// IQ1_S / IQ1_M: value = D * scale * (level + offset / 8), levels in {-1, 0, 1} from the 2048-entry
// grid, offsets +-1: as one integer 8 * level + offset (|.| <= 9) with the factor D / 8. A sub-block's
// 4 grid entries in one gather.
inline __m256i iq1_levels(__m128i idx, __m256i offsets) {
  const __m256i lv = _mm256_i32gather_epi64(reinterpret_cast<const long long*>(iq_grids::kIQ1S), idx, 8);
  return _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), lv), offsets);
}

// Grid indices of groups 8h..8h+7 (sub-blocks 2h, 2h + 1): the low bytes qs[8h..] and 3 high bits
// from `high` (bits 0-2 of each int32 lane).
inline __m256i iq1_indices(const uint8_t* qs, int h, __m256i high) {
  return _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * h))),
                         _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(7)), 8));
}
// Sub-block g's half of a vector of two sub-blocks' 4 int32 values.
template <int g>
inline __m128i half_of(__m256i v) {
  return g % 2 ? _mm256_extracti128_si256(v, 1) : _mm256_castsi256_si128(v);
}

// IQ1_S: per sub-block a u16 of 4 x 3 high index bits, a 3-bit scale and the offset's sign; the
// indices of two sub-blocks in one vector.
struct IQ1S : GridRows<IQ1S> {
  using Block = BlockIQ1_S;
  template <class F>
  static float decode(const Block& b, F&& f) {
    const __m256i rep = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1),
                  shift = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
    __m256i idx[4];
    for (int h = 0; h < 4; ++h) {
      uint32_t pair;
      std::memcpy(&pair, b.qh + 2 * h, 4);
      const __m256i q = _mm256_cvtepu16_epi32(_mm_cvtsi32_si128(static_cast<int>(pair)));
      idx[h] = iq1_indices(b.qs, h, _mm256_srlv_epi32(_mm256_permutevar8x32_epi32(q, rep), shift));
    }
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      const int h = b.qh[g];
      const __m256i v = iq1_levels(half_of<g>(idx[g / 2]), _mm256_set1_epi8(h & 0x8000 ? -1 : 1));
      f(g, _mm256_abs_epi8(v), v, _mm256_set1_epi16(static_cast<int16_t>(2 * ((h >> 12) & 7) + 1)));
    });
    return 0.125f * f16_to_f32(b.d);
  }
};

// IQ1_M's 16 3-bit scales (4 per u16, at bits 0, 3, 6, 9) as 2s + 1 bytes, sub-block g's at 2g and 2g + 1,
// in both lanes (as iq2_scales).
inline __m256i iq1m_scales(const uint8_t* sc) {
  const __m256i u = _mm256_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
  const __m256i shift = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9), seven = _mm256_set1_epi32(7);
  const auto fields = [&](__m256i which) {
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(u, which), shift), seven);
  };
  const __m256i w = _mm256_permute4x64_epi64(  // the 16 fields as int16, in order
      _mm256_packs_epi32(fields(_mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)),
                         fields(_mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3))),
      0xD8);
  __m128i s8 = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
  s8 = _mm_add_epi8(_mm_add_epi8(s8, s8), _mm_set1_epi8(1));
  return _mm256_broadcastsi128_si256(s8);
}

// IQ1_M: per 16 elements a byte of 2 x (3 high index bits, the offset's sign); 3-bit scales per 16.
// The indices and offsets of two sub-blocks in one vector each, the scales in one.
struct IQ1M : GridRows<IQ1M> {
  using Block = BlockIQ1_M;
  template <class F>
  static float decode(const Block& b, F&& f) {
    // Byte 0 of each qword into all 8 of its bytes: a group's offset.
    const __m256i first = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0,
                                           0, 0, 8, 8, 8, 8, 8, 8, 8, 8);
    const __m256i rep = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3),
                  shift = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
    const __m256i scales = iq1m_scales(b.scales);
    __m256i idx[4], off[4];
    for (int h = 0; h < 4; ++h) {
      // Group 8h + l: qh byte 4h + l/2, its low nibble for even l, its high one for odd.
      uint32_t q;
      std::memcpy(&q, b.qh + 4 * h, 4);
      const __m256i nib = _mm256_srlv_epi32(
          _mm256_permutevar8x32_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(q))), rep),
          shift);
      idx[h] = iq1_indices(b.qs, h, nib);
      off[h] = _mm256_sub_epi32(_mm256_set1_epi32(1),
                                _mm256_srli_epi32(_mm256_and_si256(nib, _mm256_set1_epi32(8)), 2));
    }
    static_for<8>([&](auto g_c) {
      constexpr int g = decltype(g_c)::value;
      const __m256i offsets = _mm256_shuffle_epi8(_mm256_cvtepi32_epi64(half_of<g>(off[g / 2])), first);
      const __m256i v = iq1_levels(half_of<g>(idx[g / 2]), offsets);
      f(g, _mm256_abs_epi8(v), v, iq2_scale_pair<g>(scales));
    });
    return 0.125f * quant_iq::scale_of(quant_iq::Kind::IQ1_M, reinterpret_cast<const uint8_t*>(&b));
  }
};

// IQ4_XS against Q8Act activations (a scale per 32, as the packed kernels): per sub-block the
// levels (one byte shuffle), their magnitudes against sign-carrying activations, one conversion
// and one fused multiply-add per token.
template <int NT>
void iq4xs_row(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  __m256 acc[NT];
  const int8_t* aq[NT];
  const float* ad[NT];
  for (int t = 0; t < NT; ++t) {
    acc[t] = _mm256_setzero_ps();
    const Q8Act a(act + t * stride, n);
    aq[t] = a.qs;
    ad[t] = a.d;
  }
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto& wb = reinterpret_cast<const BlockIQ4_XS*>(w)[b];
    const float d = f16_to_f32(wb.d);
    for (int k = 0; k < 8; ++k) {
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.qs + 16 * k));
      const __m256i v = _mm256_shuffle_epi8(
          table, _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F)));
      const __m256i mag = _mm256_sign_epi8(v, v);
      const float dk = d * static_cast<float>(iq4xs_scale(wb, k) - 32);
      for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_sign_epi8(load32(aq[t] + 256 * b + 32 * k), v);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, av), _mm256_set1_epi16(1));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dk * ad[t][8 * b + k]), acc[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]);
}

// One weight row x NT tokens.
template <typename W, int NT>
void row(const uint8_t* w, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  __m256 acc[NT], accm[NT];
  const BlockQ8_K* a[NT];
  for (int t = 0; t < NT; ++t) {
    acc[t] = accm[t] = _mm256_setzero_ps();
    a[t] = reinterpret_cast<const BlockQ8_K*>(act + t * stride);
  }
  if constexpr (NT == 1 && requires { &W::template fused<typename W::Block>; }) {
    for (int64_t b = 0; b < n / 256; ++b)
      W::fused(reinterpret_cast<const typename W::Block*>(w)[b], a[0][b], acc[0]);
    y[0] = hsum(acc[0]);
    return;
  }
  W wt;
  for (int64_t b = 0; b < n / 256; ++b) {
    wt.load(reinterpret_cast<const typename W::Block*>(w)[b]);
    for (int t = 0; t < NT; ++t) wt.dot(a[t][b], acc[t], accm[t]);
  }
  for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]) - hsum(accm[t]);
}

void iq4xs_tile(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t stride, int nt,
                float* y, int64_t ldy) {
  for (int r = 0; r < nr; ++r, w += ws, ++y) {
    switch (nt) {
      case 1:
        iq4xs_row<1>(w, n, act, stride, y, ldy);
        break;
      case 2:
        iq4xs_row<2>(w, n, act, stride, y, ldy);
        break;
      case 3:
        iq4xs_row<3>(w, n, act, stride, y, ldy);
        break;
      default:
        iq4xs_row<4>(w, n, act, stride, y, ldy);
    }
  }
}

template <typename W>
void tile(const uint8_t* w, size_t ws, int nr, int64_t n, const uint8_t* act, size_t stride, int nt, float* y,
          int64_t ldy) {
  for (int r = 0; r < nr; ++r, w += ws, ++y) {
    switch (nt) {
      case 1:
        row<W, 1>(w, n, act, stride, y, ldy);
        break;
      case 2:
        row<W, 2>(w, n, act, stride, y, ldy);
        break;
      case 3:
        row<W, 3>(w, n, act, stride, y, ldy);
        break;
      default:
        row<W, 4>(w, n, act, stride, y, ldy);
    }
  }
}

inline LowbitRows ymm_lowbit_rows() {
  return {tile<Q2K>,  tile<Q3K>,    iq4xs_tile, tile<IQ2XXS>, tile<IQ2XS>,
          tile<IQ2S>, tile<IQ3XXS>, tile<IQ3S>, tile<IQ1S>,   tile<IQ1M>};
}

}  // namespace
}  // namespace ferrum::kernels
