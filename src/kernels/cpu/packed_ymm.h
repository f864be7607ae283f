// The packed products (packed.h layouts) on 256-bit registers, for the AVX2 tier (integer dot
// products with vpmaddubsw) and the AVX-VNNI tier (vpdpbusd). Included only by packed_avx2.cpp and
// packed_avxvnni.cpp, each compiled for its tier: everything here has internal linkage, so the two
// tiers' instantiations never mix.
//
// The 16-row groups are read as two halves of 8 rows: a ymm holds 4 inputs of 8 rows (one int32 lane
// per row), so one dot-product step against a broadcast of 4 activation bytes advances 8 row sums,
// and every loaded weight vector serves all NT tokens of the tile from registers. With 16 registers
// a half of 8 rows leaves room for 4 tokens' sums; the activations are broadcast from memory (a load
// port, not an ALU one). Q2_K, Q3_K, Q5_K and Q6_K with more tokens than a tile decode each
// super-block once into a panel in L1 that all the tiles read (packed_ymm_q2q3.h, packed_ymm_k4.h,
// packed_ymm_q6k.h).
//
// Integer sums are exact and the float steps per block are those of the AVX-512 kernels, lane for
// lane: for the integer types every tier gives bitwise the same results, and a token's result never
// depends on the other tokens of the call.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/quant_mxfp4.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed.h"
#include "kernels/cpu/packed_act.h"
#include "kernels/cpu/static_for.h"

namespace ferrum::kernels {
namespace {  // internal linkage: one copy per tier's translation unit

inline __m256i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __m256i load256(const uint8_t* p) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
}
// 8 F16 values (one per row of a half) as floats.
inline __m256 load_f16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}
// Every pass that first reads a group (a gemv's, which takes both halves at once, or the first
// half's of a tile of tokens) asks for its lines 4 KiB ahead (packed.h, StreamPrefetch); the second
// half's pass reads them from the cache. On a Zen 3 VM the hardware prefetchers alone left a gemv
// at a third of the memory's speed on some layouts (Q6_K 7.6 -> 21.6 GB/s, Q8_0 14 -> 37 GB/s, one
// thread, 8192x2048; Q4_0 unchanged), where the former 512-byte software prefetch did not reach.
// 8 bytes (one per row) widened to int32 lanes, unsigned or signed.
inline __m256i u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i s8x8(const uint8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
// A per-row int32 value v (|v| < 2^15) in both 16-bit halves of its lane: the operand of a
// vpmaddwd that multiplies both 16-bit partial sums of a row by v.
inline __m256i dup16(__m256i v) {
  return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(v, 16));
}
// 0x10 in byte k where bit k of m is set (Q5's fifth bits: bit 4r+i is byte i of row r).
inline __m256i fifth_bits(const uint8_t* p) {
  uint32_t m;
  std::memcpy(&m, p, 4);
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                          2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i v =
      _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(m)), spread), bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}
// The low and high nibbles of the 32 weight bytes at w; with kFifth plus 16 where the fifth bit
// is set (the 32-bit masks at h, low nibbles, and h + 8, high nibbles).
template <bool kFifth>
inline void nibbles(const uint8_t* w, const uint8_t* h, __m256i& lo, __m256i& hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i v = load256(w);
  lo = _mm256_and_si256(v, m4);
  hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (kFifth) {
    lo = _mm256_or_si256(lo, fifth_bits(h));
    hi = _mm256_or_si256(hi, fifth_bits(h + 8));
  }
}

// ---------------------------------------------------------------- integer dot-product policies
// A row's partial sum over some steps: without VNNI 16-bit lanes (two per row) that vpmaddubsw
// steps add into, widened to int32 (vpmaddwd) before they can overflow: a step adds two products
// of a weight w <= wmax and an activation |a| <= 128, so 32767 / (256 wmax) steps fit (Q4 8, Q5 4,
// Q6 2). With VNNI the partial is int32 already. widen_scaled multiplies by a per-row factor on the
// way (without VNNI inside the same vpmaddwd; the factor in the form factor() gives).

struct DotMaddubs {
  static constexpr bool kVnni = false;
  static constexpr int steps_per_widen(int wmax) { return 32767 / (256 * wmax); }
  static __m256i step(__m256i p, __m256i w, __m256i a) {
    return _mm256_add_epi16(p, _mm256_maddubs_epi16(w, a));
  }
  static __m256i widen(__m256i p) { return _mm256_madd_epi16(p, _mm256_set1_epi16(1)); }
  static __m256i factor(__m256i v) { return dup16(v); }
  static __m256i widen_scaled(__m256i p, __m256i f) { return _mm256_madd_epi16(p, f); }
};

struct DotVnni {
  static constexpr bool kVnni = true;
  static constexpr int steps_per_widen(int) { return 1 << 20; }
  static __m256i step(__m256i p, __m256i w, __m256i a) { return _mm256_dpbusd_avx_epi32(p, w, a); }
  static __m256i widen(__m256i p) { return p; }
  static __m256i factor(__m256i v) { return v; }
  static __m256i widen_scaled(__m256i p, __m256i f) { return _mm256_mullo_epi32(p, f); }
};

// Each kernel handles H halves of the group (from half h0) per pass: H = 2 for few tokens, so a
// gemv streams each group once and a broadcast activation serves 16 rows; H = 1 for full tiles,
// where the registers go to the tokens (a half's bytes are in L1 when the next half reads them).

// ---------------------------------------------------------------- Q4_0 / Q5_0 / Q8_0

// Q4_1 and Q4_Z: Q4_0's nibbles with a per-row offset per block (a min; -z * d), a float term.
enum class Q32 { Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS, Q4_1, MXFP4, Q4_Z };

// IQ4_NL / MXFP4: the nibbles (0..15) -> the type's levels, signed (the tiers without VNNI multiply
// magnitudes by activations carrying the levels' signs), or + 128 as unsigned bytes (VNNI; the bias
// removes the 128).
template <bool kBiased, bool kMx = false>
inline __m256i iq4_bytes(__m256i nib) {
  const void* t =
      kMx ? (kBiased ? static_cast<const void*>(kMXFP4Biased) : static_cast<const void*>(kMXFP4Values))
          : (kBiased ? static_cast<const void*>(kIQ4Biased.data()) : static_cast<const void*>(kIQ4Values));
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(t))),
                             nib);
}

// H halves x NT tokens. Per token, half and block: the integer sum (8 dot-product steps; Q8_0
// without VNNI: 8 of magnitudes against signed activations, each widened), with the block's bias,
// one conversion, one multiply of the scales and one fused multiply-add.
template <class D, Q32 kT, int NT, int H>
void half32(const uint8_t* g, int h0, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nb = n / 32;
  constexpr size_t kQs = kT == Q32::Q8_0 ? 512 : kT == Q32::Q5_0 ? 320 : 256;
  // Q8_0 without VNNI: the signed levels' magnitudes against activations carrying their signs (no
  // product of the unsigned bytes fits vpmaddubsw's 16 bits), widened every step; no bias then.
  constexpr bool kIQ4 = kT == Q32::IQ4_NL || kT == Q32::IQ4_XS || kT == Q32::MXFP4;
  constexpr bool kSigned = (kT == Q32::Q8_0 || kIQ4) && !D::kVnni;
  constexpr bool kTwice = kT == Q32::Q5_0 && !D::kVnni;  // 8 steps of 5-bit weights: widen halfway
  constexpr bool kMin = kT == Q32::Q4_1 || kT == Q32::Q4_Z;
  // The block's bias starts the integer sums (an add less per token and block; 7% for Q4_0 without
  // VNNI, one thread, Zen 5): with VNNI the int32 bias; without, Q4_0's in the low 16 bits of each
  // lane (packed_act.h). The 16-bit sums then wrap, but end in range: the low half's is the sum over
  // its 16 inputs of (w - 8) * a, minus 8 times the sum of the other 16 levels (|.| <= 32512), the
  // high half's that of w * a (<= 30480), and vpmaddwd adds them exactly.
  constexpr bool kBiasFirst = !kSigned && !kMin && (D::kVnni || kT == Q32::Q4_0);
  const PackedTokens<32, int32_t, NT> tok(act, stride, n);
  [[maybe_unused]] const int32_t* bias_first[NT];
  if constexpr (kBiasFirst)
    for (int t = 0; t < NT; ++t) bias_first[t] = D::kVnni ? tok.sums[t] : tok.bias16(t, n);
  __m256 acc[H][NT];
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) acc[hh][t] = _mm256_setzero_ps();
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nb; ++b) {
    const Q32Offsets o = kT == Q32::IQ4_XS ? iq4xs_offsets(b)
                         : kT == Q32::Q4_1 ? q41_offsets(b)
                         : kT == Q32::Q4_Z ? q4z_offsets(b)
                                           : q32_offsets(b, kQs);
    if (h0 == 0) pf.upto(g + o.qs + (kT == Q32::IQ4_XS || kMin ? 256 : kQs));
    __m256i p[H][NT];
    [[maybe_unused]] __m256i p2[H][NT];  // kTwice: the first half, widened
    for (int hh = 0; hh < H; ++hh)
      for (int t = 0; t < NT; ++t) {
        p[hh][t] = kBiasFirst ? bcast32(bias_first[t] + b) : _mm256_setzero_si256();
        p2[hh][t] = _mm256_setzero_si256();
      }
    for (int hh = 0; hh < H; ++hh) {
      const int h = h0 + hh;
      const uint8_t* q = g + o.qs + 32 * h;
      if constexpr (kIQ4) {
        for (int j = 0; j < 4; ++j) {
          __m256i lo, hi;
          nibbles<false>(q + 64 * j, nullptr, lo, hi);
          lo = iq4_bytes<!kSigned, kT == Q32::MXFP4>(lo);
          hi = iq4_bytes<!kSigned, kT == Q32::MXFP4>(hi);
          for (int t = 0; t < NT; ++t) {
            const __m256i al = bcast32(tok.qs[t] + 32 * b + 4 * j),
                          ah = bcast32(tok.qs[t] + 32 * b + 16 + 4 * j);
            if constexpr (kSigned) {
              p[hh][t] = _mm256_add_epi32(
                  p[hh][t], D::widen(_mm256_maddubs_epi16(_mm256_abs_epi8(lo), _mm256_sign_epi8(al, lo))));
              p[hh][t] = _mm256_add_epi32(
                  p[hh][t], D::widen(_mm256_maddubs_epi16(_mm256_abs_epi8(hi), _mm256_sign_epi8(ah, hi))));
            } else {
              p[hh][t] = D::step(p[hh][t], lo, al);
              p[hh][t] = D::step(p[hh][t], hi, ah);
            }
          }
        }
      } else if constexpr (kSigned) {
        for (int j = 0; j < 8; ++j) {
          const __m256i w = _mm256_xor_si256(load256(q + 64 * j), _mm256_set1_epi8(static_cast<char>(0x80)));
          const __m256i mag = _mm256_abs_epi8(w);
          for (int t = 0; t < NT; ++t) {
            const __m256i a = _mm256_sign_epi8(bcast32(tok.qs[t] + 32 * b + 4 * j), w);
            p[hh][t] = _mm256_add_epi32(p[hh][t], D::widen(_mm256_maddubs_epi16(mag, a)));
          }
        }
      } else if constexpr (kT == Q32::Q8_0) {
        for (int j = 0; j < 8; ++j) {
          const __m256i w = load256(q + 64 * j);
          for (int t = 0; t < NT; ++t) p[hh][t] = D::step(p[hh][t], w, bcast32(tok.qs[t] + 32 * b + 4 * j));
        }
      } else {
        // Q5_0: the fifth bits come first (per step a 64-bit mask per nibble half), then the nibbles.
        constexpr size_t kL = kT == Q32::Q5_0 ? 64 : 0;
        const uint8_t* bits = g + o.qs + 4 * h;
        for (int j = 0; j < 4; ++j) {
          __m256i lo, hi;
          nibbles<kT == Q32::Q5_0>(q + kL + 64 * j, bits + 16 * j, lo, hi);
          for (int t = 0; t < NT; ++t) {
            p[hh][t] = D::step(p[hh][t], lo, bcast32(tok.qs[t] + 32 * b + 4 * j));
            p[hh][t] = D::step(p[hh][t], hi, bcast32(tok.qs[t] + 32 * b + 16 + 4 * j));
          }
          if constexpr (kTwice) {
            if (j == 1)
              for (int t = 0; t < NT; ++t) {
                p2[hh][t] = D::widen(p[hh][t]);
                p[hh][t] = _mm256_setzero_si256();
              }
          }
        }
      }
    }
    for (int hh = 0; hh < H; ++hh) {
      __m256 dw = load_f16x8(g + o.d + 16 * (h0 + hh));
      if constexpr (kT == Q32::IQ4_XS) {  // d * (scale - 32) per row
        int64_t sc8;
        std::memcpy(&sc8, g + o.sc + 8 * (h0 + hh), 8);
        dw = _mm256_mul_ps(dw, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(sc8))));
      }
      [[maybe_unused]] __m256 mw;  // Q4_1's mins, Q4_Z's -z * d
      if constexpr (kT == Q32::Q4_1)
        mw = load_f16x8(g + o.m + 16 * (h0 + hh));
      else if constexpr (kT == Q32::Q4_Z)
        mw = _mm256_mul_ps(dw, _mm256_cvtepi32_ps(_mm256_sub_epi32(
                                   _mm256_setzero_si256(),
                                   _mm256_cvtepu8_epi32(_mm_loadl_epi64(
                                       reinterpret_cast<const __m128i*>(g + o.m + 8 * (h0 + hh)))))));
      for (int t = 0; t < NT; ++t) {
        __m256i total;
        if constexpr (kSigned)
          total = p[hh][t];
        else if constexpr (kMin || kBiasFirst)  // kMin: no offset (the mins below)
          total = D::widen(p[hh][t]);
        else
          total = _mm256_add_epi32(D::widen(p[hh][t]), _mm256_set1_epi32(tok.sums[t][b]));
        if constexpr (kTwice) total = _mm256_add_epi32(total, p2[hh][t]);
        acc[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total),
                                     _mm256_mul_ps(dw, _mm256_set1_ps(tok.d[t][b])), acc[hh][t]);
        if constexpr (kMin)  // + m * (the token's scale * sum of its levels)
          acc[hh][t] =
              _mm256_fmadd_ps(mw, _mm256_set1_ps(reinterpret_cast<const float*>(tok.sums[t])[b]), acc[hh][t]);
      }
    }
  }
  for (int hh = 0; hh < H; ++hh)
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy + 8 * (h0 + hh), acc[hh][t]);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// The panel kernels (more tokens than a tile): super-block by super-block, with the group's bytes
// asked for ahead, decode(o) fills the panel once from the super-block's offsets o = offsets(b),
// then every tile of kTile tokens (the last one shorter) over both halves runs
// tile(std::integral_constant<int, tokens>, half, first token, b, o, sums), adding super-block b to
// the tile's running row sums (16 floats per token, row-major from sums). The sums stay in this
// frame and reach y once, at the end: read and written in y for every super-block, a work item's
// 16 rows of a token shared cache lines with the next item's, which the other thread was writing
// (2 threads 1.1x one on the Q6_K panels of a Zen 5 VM).
constexpr int kPanelTokens = 16;  // the most tokens a panel call takes (Tiles::kPanelCall)
template <int kTile, class Offsets, class Decode, class Tile>
inline void panel_super_blocks(const uint8_t* g, int64_t n, size_t block_bytes, int nt, float* y, int64_t ldy,
                               Offsets&& offsets, Decode&& decode, Tile&& tile) {
  alignas(32) float sums[kPanelTokens][kPackRows];  // nt <= kPanelTokens: max_nt of these kernels
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < n / 256; ++b) {
    const auto o = offsets(b);
    pf.upto(g + (b + 1) * block_bytes);
    decode(o);
    for (int t0 = 0; t0 < nt; t0 += kTile)
      with_nt<kTile>(std::min(kTile, nt - t0), [&](auto k) {
        for (int h = 0; h < 2; ++h) tile(k, h, t0, b, o, sums[t0]);
      });
  }
  for (int t = 0; t < nt; ++t) std::memcpy(y + t * ldy, sums[t], sizeof sums[t]);
}
// A panel tile's running sums (8 rows of a token): super-block 0 starts them from zero, as the
// 4-token kernels' accumulators; the later ones add to them.
inline __m256 panel_sums(const float* yt, int64_t b) {
  return b == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(yt);
}

#include "kernels/cpu/packed_ymm_k4.h"

// ---------------------------------------------------------------- Q6_K

// Without VNNI the sub-blocks' unsigned offset (Q6_K 32 = 1 << 5, Q3_K 4 = 1 << 2) comes off once per
// super-block: S -= offset * sum over the 16 sub-blocks of int8 scale x level sum, for the 8 rows of
// half h (sc: the super-block's [16 sub-blocks][16 rows] scales).
template <int kShift, int NT>
inline void sub_level_offsets(const uint8_t* sc, int h, const PackedTokens<256, int32_t, NT>& tok, int64_t n,
                              int64_t b, __m256i* S) {
  __m256i M[NT];
  for (int t = 0; t < NT; ++t) M[t] = _mm256_setzero_si256();
  for (int pr = 0; pr < 8; ++pr) {
    const __m128i s0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * (2 * pr) + 8 * h));
    const __m128i s1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * (2 * pr + 1) + 8 * h));
    const __m256i pair = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s1));
    for (int t = 0; t < NT; ++t)
      M[t] = _mm256_add_epi32(M[t],
                              _mm256_madd_epi16(pair, bcast32(q6k_level_sums(tok.sums[t], n, b) + 2 * pr)));
  }
  for (int t = 0; t < NT; ++t) S[t] = _mm256_sub_epi32(S[t], _mm256_slli_epi32(M[t], kShift));
}

#include "kernels/cpu/packed_ymm_q6k.h"

// ---------------------------------------------------------------- F16 x F32 and BF16 x BF16
// Whole groups of 16 rows (two ymm per input), so each broadcast activation serves 2 FMAs; even
// and odd inputs (BF16: pairs) in separate accumulators (the AVX-512 kernels' order, so a lone
// token is not latency-bound). A call covers all inputs (GroupFn) or, for F16, one block of them
// (BlockFn: the sums carried between blocks in `part`, 32 floats per token, so the blocks in order
// give the whole call's bits).

template <int NT>
struct FloatSums {
  __m256 e[NT][2], od[NT][2];
  // Zeros for the first block, else the sums carried in part.
  void start(int step, const float* part) {
    for (int t = 0; t < NT; ++t)
      for (int i = 0; i < 2; ++i) {
        const bool first = step & PackedKernels::kFirstBlock;
        e[t][i] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(part + 32 * t + 8 * i);
        od[t][i] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(part + 32 * t + 16 + 8 * i);
      }
  }
  // y = e + od after the last block, else the sums carried in part.
  void finish(int step, float* part, float* y, int64_t ldy) const {
    for (int t = 0; t < NT; ++t)
      for (int i = 0; i < 2; ++i)
        if (step & PackedKernels::kLastBlock) {
          _mm256_storeu_ps(y + t * ldy + 8 * i, _mm256_add_ps(e[t][i], od[t][i]));
        } else {
          _mm256_storeu_ps(part + 32 * t + 8 * i, e[t][i]);
          _mm256_storeu_ps(part + 32 * t + 16 + 8 * i, od[t][i]);
        }
  }
};

// A call over all inputs asks for the group's lines ahead (StreamPrefetch); a block's slice stays
// in L1 across its token tiles, and prefetching there measured slower (session 32).
template <int NT, bool kStream>
void f16_span(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, FloatSums<NT>& s) {
  const float* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const float*>(act + t * stride);
  StreamPrefetch pf(g);
  for (int64_t k = 0; k < n; k += 2) {
    if constexpr (kStream && NT >= 2) pf.upto(g + 32 * (k + 2));
    const __m256 w0 = load_f16x8(g + 32 * k), w1 = load_f16x8(g + 32 * k + 16);
    const __m256 v0 = load_f16x8(g + 32 * k + 32), v1 = load_f16x8(g + 32 * k + 48);
    for (int t = 0; t < NT; ++t) {
      const __m256 x0 = _mm256_broadcast_ss(a[t] + k), x1 = _mm256_broadcast_ss(a[t] + k + 1);
      s.e[t][0] = _mm256_fmadd_ps(w0, x0, s.e[t][0]);
      s.e[t][1] = _mm256_fmadd_ps(w1, x0, s.e[t][1]);
      s.od[t][0] = _mm256_fmadd_ps(v0, x1, s.od[t][0]);
      s.od[t][1] = _mm256_fmadd_ps(v1, x1, s.od[t][1]);
    }
  }
}

// BF16 pairs (inputs 2p, 2p+1 of a row in one int32 lane) widened by shifts; the odd input is
// added before the even one, as vdpbf16ps does (products of BF16 values are exact in F32).
template <int NT, bool kStream>
void bf16_span(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, FloatSums<NT>& s) {
  const uint16_t* a[NT];
  for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const uint16_t*>(act + t * stride);
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  auto hi = [&](__m256i v) { return _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask)); };
  auto lo = [](__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); };
  StreamPrefetch pf(g);
  for (int64_t k = 0; k < n; k += 4) {
    if constexpr (kStream && NT >= 2) pf.upto(g + 32 * (k + 4));
    __m256i w[2][2];  // [pair][half]
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 2; ++i) w[p][i] = load256(g + 32 * (k + 2 * p) + 32 * i);
    for (int t = 0; t < NT; ++t) {
      const __m256i x0 = bcast32(a[t] + k), x1 = bcast32(a[t] + k + 2);
      for (int i = 0; i < 2; ++i) {
        s.e[t][i] = _mm256_fmadd_ps(lo(w[0][i]), lo(x0), _mm256_fmadd_ps(hi(w[0][i]), hi(x0), s.e[t][i]));
        s.od[t][i] = _mm256_fmadd_ps(lo(w[1][i]), lo(x1), _mm256_fmadd_ps(hi(w[1][i]), hi(x1), s.od[t][i]));
      }
    }
  }
}

// ---------------------------------------------------------------- Q3_K / Q2_K (a part of this file)

#include "kernels/cpu/packed_ymm_q2q3.h"

// ---------------------------------------------------------------- the tier's table

// Tokens per call: as many as 16 registers hold.
template <class D>
struct Tiles {
  static constexpr int kQ32 = 6, kQ8 = 6, kK4 = 4, kQ6K = 4, kF16 = 3, kBF16 = 2;
  // Q2_K / Q3_K / Q5_K / Q6_K tokens per call: more than a tile go through the panel kernels (with
  // VNNI too: one thread, 16 tokens, 1.07x the tiles' speed for Q6_K, 1.38x Q5_K, 1.49x Q2_K, 1.83x
  // Q3_K on a Zen 5 VM).
  static constexpr int kPanelCall = kPanelTokens;
};

// A group: both halves in one pass for up to kWhole tokens, else half by half.
template <int kWhole, class Run>
inline void halves(int nt, Run&& run) {
  if (nt <= kWhole) {
    run(std::integral_constant<int, 2>{}, 0);
  } else {
    run(std::integral_constant<int, 1>{}, 0);
    run(std::integral_constant<int, 1>{}, 1);
  }
}

template <class D, Q32 kT>
void q32_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  constexpr int kMax = kT == Q32::Q8_0 ? Tiles<D>::kQ8 : Tiles<D>::kQ32;
  with_nt<kMax>(nt, [&](auto k) {
    halves<2>(nt, [&](auto H, int h0) {
      half32<D, kT, decltype(k)::value, decltype(H)::value>(g, h0, n, a, s, y, l);
    });
  });
}
template <class D, bool kQ5>
void k4_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  constexpr int kTile = Tiles<D>::kK4;
  if constexpr (kQ5) {
    if (nt > kTile) return k4_panel<D, kQ5, kTile>(g, n, a, s, nt, y, l);
  }
  for (int t0 = 0; t0 < nt; t0 += kTile)  // Q4_K: more than a tile only when not in lanes
    with_nt<kTile>(std::min(kTile, nt - t0), [&](auto k) {
      halves<1>(k.value, [&](auto H, int h0) {
        half_k4<D, kQ5, decltype(k)::value, decltype(H)::value>(g, h0, n, a + t0 * s, s, y + t0 * l, l);
      });
    });
}
// The Q6_K and Q3_K panels with VNNI too run the steps without it (vpmaddubsw, the offset once per
// super-block): against the vpdpbusd panels 1.10x (Q6_K) and 1.04x (Q3_K) the multiply-adds per
// cycle (16 and 64 tokens, one thread, Zen 5, alternated runs; the same bits). Tiles of up to 4
// tokens are faster with vpdpbusd.
template <class D>
void q6k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  if (nt > Tiles<D>::kQ6K) return q6k_panel<DotMaddubs, Tiles<D>::kQ6K>(g, n, a, s, nt, y, l);
  with_nt<Tiles<D>::kQ6K>(nt, [&](auto k) {
    halves<1>(nt, [&](auto H, int h0) {
      half_q6k<D, decltype(k)::value, decltype(H)::value>(g, h0, n, a, s, y, l);
    });
  });
}
template <class D>
void q3k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  if (nt > Tiles<D>::kQ6K) return q3k_panel<DotMaddubs, Tiles<D>::kQ6K>(g, n, a, s, nt, y, l);
  with_nt<Tiles<D>::kQ6K>(nt, [&](auto k) {
    halves<1>(nt, [&](auto H, int h0) {
      half_q3k<D, decltype(k)::value, decltype(H)::value>(g, h0, n, a, s, y, l);
    });
  });
}
template <class D>
void q2k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  if (nt > Tiles<D>::kQ6K) return q2k_panel<D, Tiles<D>::kQ6K>(g, n, a, s, nt, y, l);
  with_nt<Tiles<D>::kQ6K>(nt, [&](auto k) {
    halves<1>(nt, [&](auto H, int h0) {
      half_q2k<D, decltype(k)::value, decltype(H)::value>(g, h0, n, a, s, y, l);
    });
  });
}
template <class D>
void f16_block_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t st, int nt, float* part, int step,
                  float* y, int64_t l) {
  with_nt<Tiles<D>::kF16>(nt, [&](auto k) {
    FloatSums<decltype(k)::value> s;
    s.start(step, part);
    f16_span<decltype(k)::value, false>(g, n, a, st, s);
    s.finish(step, part, y, l);
  });
}
template <class D, bool kBF16>
void float_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t st, int nt, float* y, int64_t l) {
  constexpr int kAll = PackedKernels::kFirstBlock | PackedKernels::kLastBlock;
  with_nt<kBF16 ? Tiles<D>::kBF16 : Tiles<D>::kF16>(nt, [&](auto k) {
    FloatSums<decltype(k)::value> s;
    s.start(kAll, nullptr);
    if constexpr (kBF16)
      bf16_span<decltype(k)::value, true>(g, n, a, st, s);
    else
      f16_span<decltype(k)::value, true>(g, n, a, st, s);
    s.finish(kAll, nullptr, y, l);
  });
}

template <class D>
constexpr PackedKernels ymm_packed_kernels() {
  using T = Tiles<D>;
  return {{q32_fn<D, Q32::Q4_0>, T::kQ32},
          {q32_fn<D, Q32::Q5_0>, T::kQ32},
          {q32_fn<D, Q32::Q8_0>, T::kQ8},
          // Q4_K / Q5_K: 13 to 16 tokens in lanes (Q4_K through a tile panel was no faster)
          {k4_fn<D, false>, kLaneTokens, nullptr, k4_lanes_fn<D, false>},
          {k4_fn<D, true>, T::kPanelCall, nullptr, k4_lanes_fn<D, true>},
          {q6k_fn<D>, T::kPanelCall},
          {float_fn<D, false>, T::kF16, f16_block_fn<D>},
          {float_fn<D, true>, T::kBF16},  // in blocks: 0.86x (bf16 prompt, session 32)
          {q32_fn<D, Q32::IQ4_NL>, T::kQ8},
          {q32_fn<D, Q32::IQ4_XS>, T::kQ8},
          {q32_fn<D, Q32::Q4_1>, T::kQ32},
          {q3k_fn<D>, T::kPanelCall},
          {q2k_fn<D>, T::kPanelCall},
          {q32_fn<D, Q32::MXFP4>, T::kQ8},
          {q32_fn<D, Q32::Q4_Z>, T::kQ32}};
}

}  // namespace
}  // namespace ferrum::kernels
