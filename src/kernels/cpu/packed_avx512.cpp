// AVX-512 VNNI kernels for the 16-row packed layouts (packed.h). A zmm holds 4 inputs of each of 16
// rows (one int32 lane per row), so one vpdpbusd against a broadcast of 4 activation bytes advances
// 16 row sums at once, and the loaded weights serve every token of the tile from registers.
// Per token the sequence of operations does not depend on how many tokens the call has (NT), so
// results are bitwise the same for a token alone or in a batch.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "core/quant.h"
#include "core/quant_mxfp4.h"
#include "kernels/cpu/bf16_tile_zmm.h"
#include "kernels/cpu/cpu_tiers.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed.h"
#include "kernels/cpu/packed_act.h"
#include "kernels/cpu/packed_zmm_float.h"

namespace ferrum::kernels {
namespace {

// Broadcast of the 4 bytes at p to all 16 int32 lanes (folds into the instruction's memory operand).
inline __m512i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

inline __m512 load_f16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// ---------------------------------------------------------------- Q4_0 / Q5_0 / Q8_0 x Q8B activations
// From kPrefetchTokens tokens per pass the kernels compute long enough per byte that prefetching
// pays (packed.h, StreamPrefetch). A gemv prefetches on AMD family 1Ah (Zen 5) only: there the 1B
// model's decode ran 1.19x (Q4_0), 1.33x (Q4_K_M), 1.92x (Q6_K) faster with it, Q8_0 0.99x
// (bench/README.md, session 35), while on the Zen 4 host of session 3 an earlier prefetch (every
// line of a block, 0.5-4 KiB ahead) made gemvs slower (2 threads, 8192x2048: Q4_0 38-49 GB/s without
// vs 27-38 with; Q4_K and Q6_K 2x slower); other AVX-512 hosts are not measured with this one.
const bool kGemvPrefetch = amd_zen5_or_later();

// The low and high nibbles of 64 weight bytes at w as bytes; with kFifth (Q5_0, Q5_K) plus 16
// where the fifth bit is set: two 64-bit masks at h (low nibbles, then high; bit 4r+i for byte i of
// row r), applied with one masked byte add each.
// One of the two (kHigh: the high nibbles, with the mask at h + 8).
template <bool kFifth, bool kHigh>
inline __m512i nibble_half(const uint8_t* w, const uint8_t* h) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i v = _mm512_load_si512(w);
  __m512i x = kHigh ? _mm512_and_si512(_mm512_srli_epi16(v, 4), m4) : _mm512_and_si512(v, m4);
  if constexpr (kFifth) {
    uint64_t m;
    std::memcpy(&m, h + (kHigh ? 8 : 0), 8);
    x = _mm512_mask_add_epi8(x, _cvtu64_mask64(m), x, _mm512_set1_epi8(0x10));
  }
  return x;
}
template <bool kFifth>
inline void nibbles(const uint8_t* w, const uint8_t* h, __m512i& lo, __m512i& hi) {
  lo = nibble_half<kFifth, false>(w, h);
  hi = nibble_half<kFifth, true>(w, h);
}

// The 32-element block types with one float scale: Q4_0 (4 zmm of nibbles per block), Q5_0 (the same
// plus 64 bytes of fifth bits) and Q8_0 (8 zmm of levels).
// IQ4_NL, IQ4_XS and MXFP4: codebook levels in Q4_0's nibble layout. Q4_1 and Q4_Z: Q4_0's nibbles
// with a per-row offset per block (a min; -z * d), added as a float term.
enum class Q32 { Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS, Q4_1, MXFP4, Q4_Z };

// IQ4_NL / IQ4_XS / MXFP4: the nibbles (0..15) -> the type's levels + 128 as unsigned bytes (the
// activations' bias removes the 128).
template <bool kMx>
inline __m512i iq4_bytes(__m512i nib) {
  const void* levels =
      kMx ? static_cast<const void*>(kMXFP4Biased) : static_cast<const void*>(kIQ4Biased.data());
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels));
  return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), nib);
}

// One 16-row group x NT tokens. Per token and block: 8 vpdpbusd (two chains, summed), one
// conversion, one multiply of the scales and one fused multiply-add for the 16 rows.
template <Q32 kT, int NT>
void group32(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nb = n / 32;
  constexpr bool kQ8 = kT == Q32::Q8_0;
  constexpr size_t kQs = kT == Q32::Q8_0 ? 512 : kT == Q32::Q5_0 ? 320 : 256;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const PackedTokens<32, int32_t, NT> tok(act, stride, n);
  constexpr bool kIQ4 = kT == Q32::IQ4_NL || kT == Q32::IQ4_XS || kT == Q32::MXFP4;
  constexpr bool kMin = kT == Q32::Q4_1 || kT == Q32::Q4_Z;
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nb; ++b) {
    const Q32Offsets o = kT == Q32::IQ4_XS ? iq4xs_offsets(b)
                         : kT == Q32::Q4_1 ? q41_offsets(b)
                         : kT == Q32::Q4_Z ? q4z_offsets(b)
                                           : q32_offsets(b, kQs);
    const uint8_t* q = g + o.qs;
    if (NT >= kPrefetchTokens || kGemvPrefetch) pf.upto(q + (kT == Q32::IQ4_XS || kMin ? 256 : kQs));
    __m512i p0[NT], p1[NT];
    for (int t = 0; t < NT; ++t) {
      // The offset's bias (Q4_1, Q4_Z: none, their offsets are added below).
      p0[t] = kMin ? _mm512_setzero_si512() : _mm512_set1_epi32(tok.sums[t][b]);
      p1[t] = _mm512_setzero_si512();
    }
    if constexpr (kQ8) {
      for (int j = 0; j < 8; j += 2) {
        const __m512i w0 = _mm512_load_si512(q + 64 * j), w1 = _mm512_load_si512(q + 64 * j + 64);
        for (int t = 0; t < NT; ++t) {
          p0[t] = _mm512_dpbusd_epi32(p0[t], w0, bcast32(tok.qs[t] + 32 * b + 4 * j));
          p1[t] = _mm512_dpbusd_epi32(p1[t], w1, bcast32(tok.qs[t] + 32 * b + 4 * j + 4));
        }
      }
    } else {
      // Q5_0: the fifth bits come first (for step j a 64-bit mask per nibble half, bit 4r+i for
      // byte i of row r), then the nibbles as in Q4_0.
      constexpr size_t kL = kT == Q32::Q5_0 ? 64 : 0;
      for (int j = 0; j < 4; ++j) {
        __m512i lo, hi;
        nibbles<kT == Q32::Q5_0>(q + kL + 64 * j, q + 16 * j, lo, hi);
        if constexpr (kIQ4) {
          lo = iq4_bytes<kT == Q32::MXFP4>(lo);
          hi = iq4_bytes<kT == Q32::MXFP4>(hi);
        }
        for (int t = 0; t < NT; ++t) {
          p0[t] = _mm512_dpbusd_epi32(p0[t], lo, bcast32(tok.qs[t] + 32 * b + 4 * j));
          p1[t] = _mm512_dpbusd_epi32(p1[t], hi, bcast32(tok.qs[t] + 32 * b + 16 + 4 * j));
        }
      }
    }
    __m512 dw = load_f16x16(g + o.d);
    if constexpr (kT == Q32::IQ4_XS)  // d * (scale - 32) per row
      dw = _mm512_mul_ps(dw, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                 _mm_load_si128(reinterpret_cast<const __m128i*>(g + o.sc)))));
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(p0[t], p1[t])),
                               _mm512_mul_ps(dw, _mm512_set1_ps(tok.d[t][b])), acc[t]);
    if constexpr (kMin) {  // + m * (the token's scale * sum of its levels); Q4_Z: m = -z * d
      const __m512 mw =
          kT == Q32::Q4_1
              ? load_f16x16(g + o.m)
              : _mm512_mul_ps(
                    dw,
                    _mm512_cvtepi32_ps(_mm512_sub_epi32(
                        _mm512_setzero_si512(),
                        _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(g + o.m))))));
      for (int t = 0; t < NT; ++t)
        acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(reinterpret_cast<const float*>(tok.sums[t])[b]), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// ---------------------------------------------------------------- Q4_K, Q5_K and Q6_K x Q8_K activations

// One sub-block of a Q4_K / Q5_K chunk (the low nibbles, or with kHigh the high ones) for 7 or 8
// tokens: its integer sums scaled by its 6-bit scales into S, as group_k4 does for both at once
// (integer sums: the same values whichever goes first).
template <bool kQ5, bool kHigh, int NT>
inline void k4_sub_block(const uint8_t* q, size_t nib, const uint8_t* scales,
                         const PackedTokens<256, int16_t, NT>& tok, int64_t at, __m512i* S) {
  __m512i p[NT];
  for (int t = 0; t < NT; ++t) p[t] = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) {
    const __m512i x = nibble_half<kQ5, kHigh>(q + nib + 64 * j, q + 16 * j);
    for (int t = 0; t < NT; ++t) p[t] = _mm512_dpbusd_epi32(p[t], x, bcast32(tok.qs[t] + at + 4 * j));
  }
  const __m512i f = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(scales)));
  for (int t = 0; t < NT; ++t) S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p[t], f));
}

// One 16-row group x NT tokens (Q4_K, or Q5_K with kQ5). Per sub-block the integer dot product of
// each row (16 vpdpbusd for a pair of sub-blocks, low and high nibbles; Q5_K adds 16 to the bytes
// whose fifth bit is set with one masked byte add each) is scaled by its 6-bit scale in integers
// (vpmulld, exact: |sum| < 2^31), the mins term is 4 vpdpwssd per super-block, and the super-block
// ends in two fused multiply-adds per token.
template <bool kQ5, int NT>
void group_k4(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  constexpr size_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes,
                   kChunk = kQ5 ? kQ5KChunkBytes : kQ4KChunkBytes;
  constexpr size_t kNib = kQ5 ? kQ5KMaskBytes : 0;  // Q5_K: the fifth-bit masks precede each chunk's nibbles
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const PackedTokens<256, int16_t, NT> tok(act, stride, n);
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q4KOffsets o = q4k_offsets(b, kBlock);
    __m512i S[NT];
    for (int t = 0; t < NT; ++t) S[t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = g + o.qs + c * kChunk;
      if (NT >= kPrefetchTokens || kGemvPrefetch) pf.upto(q + kChunk);
      if constexpr (NT > 6) {  // the chunk's two sub-blocks one after the other (3 x NT registers)
        k4_sub_block<kQ5, false, NT>(q, kNib, g + o.sc + 32 * c, tok, 256 * b + 64 * c, S);
        k4_sub_block<kQ5, true, NT>(q, kNib, g + o.sc + 32 * c + 16, tok, 256 * b + 64 * c + 32, S);
        continue;
      }
      __m512i pl[NT], ph[NT];
      for (int t = 0; t < NT; ++t) pl[t] = ph[t] = _mm512_setzero_si512();
      for (int j = 0; j < 8; ++j) {
        __m512i lo, hi;
        nibbles<kQ5>(q + kNib + 64 * j, q + 16 * j, lo, hi);
        for (int t = 0; t < NT; ++t) {
          const int8_t* a = tok.qs[t] + 256 * b + 64 * c + 4 * j;
          pl[t] = _mm512_dpbusd_epi32(pl[t], lo, bcast32(a));
          ph[t] = _mm512_dpbusd_epi32(ph[t], hi, bcast32(a + 32));
        }
      }
      const __m512i sl =
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(g + o.sc + 32 * c)));
      const __m512i sh =
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(g + o.sc + 32 * c + 16)));
      for (int t = 0; t < NT; ++t)
        S[t] = _mm512_add_epi32(
            S[t], _mm512_add_epi32(_mm512_mullo_epi32(pl[t], sl), _mm512_mullo_epi32(ph[t], sh)));
    }
    __m512i M[NT];
    for (int t = 0; t < NT; ++t) M[t] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m512i mn =
          _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(g + o.mn + 32 * p)));
      for (int t = 0; t < NT; ++t) M[t] = _mm512_dpwssd_epi32(M[t], mn, bcast32(tok.sums[t] + 8 * b + 2 * p));
    }
    const __m512 d = load_f16x16(g + o.d), dm = load_f16x16(g + o.dmin);
    for (int t = 0; t < NT; ++t) {
      const __m512 da = _mm512_set1_ps(tok.d[t][b]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, da), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M[t]), _mm512_mul_ps(dm, da), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// Q6_K, half h of super-block b (qs at q, scales at sc), up to 4 tokens: per 4 inputs j the
// low-nibble bytes L j and L j+8 and the high-bit bytes H j give 4 vectors of 6-bit values
// (elements 4j, 64+4j, 32+4j, 96+4j of the half, in sub-blocks j/4, 4+j/4, 2+j/4, 6+j/4), so each
// token has 4 independent chains (a lone token is not bound by their latency); each sub-block's sum
// (4 vpdpbusd from its bias) is scaled by its int8 scale in integers (exact: |sum| < 2^31).
template <int NT>
inline void q6k_half_by_steps(const uint8_t* q, const uint8_t* sc, const PackedTokens<256, int32_t, NT>& tok,
                              int64_t b, int h, __m512i* S) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  for (int jq = 0; jq < 2; ++jq) {
    const int sb[4] = {8 * h + jq, 8 * h + 4 + jq, 8 * h + 2 + jq, 8 * h + 6 + jq};
    __m512i p[4][NT];
    for (int t = 0; t < NT; ++t)
      for (int v = 0; v < 4; ++v) p[v][t] = _mm512_set1_epi32(tok.sums[t][16 * b + sb[v]]);
    for (int j = 4 * jq; j < 4 * jq + 4; ++j) {
      const __m512i l0 = _mm512_load_si512(q + q6k_l(h, j)), l1 = _mm512_load_si512(q + q6k_l(h, j + 8));
      const __m512i hh = _mm512_load_si512(q + q6k_h(h, j));
      const __m512i va =
          _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(hh, 4), m30));
      const __m512i vb =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(hh, m30));
      const __m512i vc =
          _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(hh, 2), m30));
      const __m512i vd = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                         _mm512_and_si512(_mm512_srli_epi16(hh, 2), m30));
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = tok.qs[t] + 256 * b + 128 * h + 4 * j;
        p[0][t] = _mm512_dpbusd_epi32(p[0][t], va, bcast32(a));
        p[1][t] = _mm512_dpbusd_epi32(p[1][t], vb, bcast32(a + 64));
        p[2][t] = _mm512_dpbusd_epi32(p[2][t], vc, bcast32(a + 32));
        p[3][t] = _mm512_dpbusd_epi32(p[3][t], vd, bcast32(a + 96));
      }
    }
    for (int v = 0; v < 4; ++v) {
      const __m512i f =
          _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * sb[v])));
      for (int t = 0; t < NT; ++t) S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p[v][t], f));
    }
  }
}

// The same for 5 to 8 tokens, one sub-block at a time (the same integer sums, added to S in the same
// order): 3 x 8 registers hold the tile, and every unpacked vector serves 8 tokens (each step's bytes
// are loaded again from L1 for each of its sub-blocks).
template <int NT>
inline void q6k_half_by_subblocks(const uint8_t* q, const uint8_t* sc,
                                  const PackedTokens<256, int32_t, NT>& tok, int64_t b, int h, __m512i* S) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  for (int jq = 0; jq < 2; ++jq)
    for (int v = 0; v < 4; ++v) {
      const int sb = 8 * h + q6k_value_sub_block(v) + jq;
      const int a_off = 16 * q6k_value_sub_block(v);
      __m512i p[NT];
      for (int t = 0; t < NT; ++t) p[t] = _mm512_set1_epi32(tok.sums[t][16 * b + sb]);
      for (int j = 4 * jq; j < 4 * jq + 4; ++j) {
        const __m512i l = _mm512_load_si512(q + q6k_l(h, v < 2 ? j : j + 8));
        const __m512i hh = _mm512_load_si512(q + q6k_h(h, j));
        // The low nibble (v even) or the high one (odd) of L, with its two bits of H.
        const __m512i lo4 =
            v % 2 == 0 ? _mm512_and_si512(l, m4) : _mm512_and_si512(_mm512_srli_epi16(l, 4), m4);
        const __m512i hi2 = v == 0   ? _mm512_slli_epi16(hh, 4)
                            : v == 1 ? hh
                            : v == 2 ? _mm512_slli_epi16(hh, 2)
                                     : _mm512_srli_epi16(hh, 2);
        const __m512i w = _mm512_or_si512(lo4, _mm512_and_si512(hi2, m30));
        for (int t = 0; t < NT; ++t)
          p[t] = _mm512_dpbusd_epi32(p[t], w, bcast32(tok.qs[t] + 256 * b + 128 * h + 4 * j + a_off));
      }
      const __m512i f = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * sb)));
      for (int t = 0; t < NT; ++t) S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p[t], f));
    }
}

// One 16-row group x NT tokens of Q6_K: the halves' integer sums, one float step per super-block.
template <int NT>
void group_q6k(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q6KOffsets o = q6k_offsets(b);
    __m512i S[NT];
    for (int t = 0; t < NT; ++t) S[t] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = g + o.qs;
      if (NT >= kPrefetchTokens || kGemvPrefetch) pf.upto(q + 1536 * (h + 1));
      if constexpr (NT <= 4)
        q6k_half_by_steps<NT>(q, g + o.sc, tok, b, h, S);
      else
        q6k_half_by_subblocks<NT>(q, g + o.sc, tok, b, h, S);
    }
    const __m512 d = load_f16x16(g + o.d);
    for (int t = 0; t < NT; ++t)
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, _mm512_set1_ps(tok.d[t][b])), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// One 16-row group x NT tokens of Q3_K. A step's 64 bytes of qs (4 inputs of 16 rows) hold the two
// low bits of 4 values per byte (sub-blocks 2i + j/4 of the chunk, i < 4) and the hm step the third
// bits: per value one shift and mask of each, one or, one vpdpbusd per token (from the -4 bias of its
// sub-block); each sub-block's sum is scaled by its int8 scale in integers (exact), one float step
// per super-block.
template <int NT>
void group_q3k(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4);
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q3KOffsets o = q3k_offsets(b);
    if (NT >= kPrefetchTokens || kGemvPrefetch) pf.upto(g + (b + 1) * kQ3KBlockBytes);
    __m512i S[NT];
    for (int t = 0; t < NT; ++t) S[t] = _mm512_setzero_si512();
    for (int c = 0; c < 2; ++c)
      for (int half = 0; half < 2; ++half) {  // steps j = 4 half .. 4 half + 3: sub-blocks 8c + 2i + half
        __m512i p[4][NT];
        for (int i = 0; i < 4; ++i)
          for (int t = 0; t < NT; ++t)
            p[i][t] = _mm512_set1_epi32(tok.sums[t][16 * b + 8 * c + 2 * i + half]);
        for (int j = 4 * half; j < 4 * half + 4; ++j) {
          const __m512i l = _mm512_load_si512(g + o.qs + 64 * (8 * c + j)),
                        h = _mm512_load_si512(g + o.hm + 64 * j);
          for (int i = 0; i < 4; ++i) {
            const __m512i lo = _mm512_and_si512(_mm512_srl_epi16(l, _mm_cvtsi32_si128(2 * i)), m3);
            const int hb = 4 * c + i;  // the third bit, moved to bit 2
            const __m512i hi = _mm512_and_si512(hb >= 2 ? _mm512_srl_epi16(h, _mm_cvtsi32_si128(hb - 2))
                                                        : _mm512_sll_epi16(h, _mm_cvtsi32_si128(2 - hb)),
                                                m4);
            const __m512i w = _mm512_or_si512(lo, hi);
            for (int t = 0; t < NT; ++t)
              p[i][t] =
                  _mm512_dpbusd_epi32(p[i][t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * j));
          }
        }
        for (int i = 0; i < 4; ++i) {
          const __m512i sc = _mm512_cvtepi8_epi32(
              _mm_load_si128(reinterpret_cast<const __m128i*>(g + o.sc + 16 * (8 * c + 2 * i + half))));
          for (int t = 0; t < NT; ++t) S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p[i][t], sc));
        }
      }
    const __m512 d = load_f16x16(g + o.d);
    for (int t = 0; t < NT; ++t)
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, _mm512_set1_ps(tok.d[t][b])), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// One 16-row group x NT tokens of Q2_K: the levels as Q3_K's low bits, each sub-block's sum scaled
// by its 4-bit scale in integers; the mins term one vpdpwssd per sub-block pair (the 4-bit mins of 16
// rows against the token's two level sums), two float steps per super-block.
template <int NT>
void group_q2k(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y, int64_t ldy) {
  const int64_t nsb = n / 256;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  const __m512i m3 = _mm512_set1_epi8(3), m15 = _mm512_set1_epi32(15), m15w = _mm512_set1_epi16(15);
  StreamPrefetch pf(g);
  for (int64_t b = 0; b < nsb; ++b) {
    const Q2KOffsets o = q2k_offsets(b);
    if (NT >= kPrefetchTokens || kGemvPrefetch) pf.upto(g + (b + 1) * kQ2KBlockBytes);
    __m512i S[NT], M[NT];
    for (int t = 0; t < NT; ++t) S[t] = M[t] = _mm512_setzero_si512();
    for (int c = 0; c < 2; ++c)
      for (int half = 0; half < 2; ++half) {  // steps j = 4 half .. 4 half + 3: sub-blocks 8c + 2i + half
        __m512i p[4][NT];
        for (int i = 0; i < 4; ++i)
          for (int t = 0; t < NT; ++t) p[i][t] = _mm512_setzero_si512();
        for (int j = 4 * half; j < 4 * half + 4; ++j) {
          const __m512i l = _mm512_load_si512(g + o.qs + 64 * (8 * c + j));
          for (int i = 0; i < 4; ++i) {
            const __m512i w = _mm512_and_si512(_mm512_srl_epi16(l, _mm_cvtsi32_si128(2 * i)), m3);
            for (int t = 0; t < NT; ++t)
              p[i][t] =
                  _mm512_dpbusd_epi32(p[i][t], w, bcast32(tok.qs[t] + 256 * b + 128 * c + 32 * i + 4 * j));
          }
        }
        for (int i = 0; i < 4; ++i) {
          // Pair 4c + i holds sub-blocks 8c + 2i (low byte of each row's 16-bit lane) and 8c + 2i + 1.
          const __m512i v = _mm512_cvtepu8_epi16(
              _mm256_load_si256(reinterpret_cast<const __m256i*>(g + o.sm + 32 * (4 * c + i))));
          const __m512i sc = _mm512_and_si512(half ? _mm512_srli_epi32(v, 16) : v, m15);
          for (int t = 0; t < NT; ++t) S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p[i][t], sc));
        }
      }
    for (int pr = 0; pr < 8; ++pr) {
      const __m512i mn = _mm512_and_si512(
          _mm512_srli_epi16(
              _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(g + o.sm + 32 * pr))),
              4),
          m15w);
      for (int t = 0; t < NT; ++t)
        M[t] = _mm512_dpwssd_epi32(M[t], mn, bcast32(q6k_level_sums(tok.sums[t], n, b) + 2 * pr));
    }
    const __m512 d = load_f16x16(g + o.d), dm = load_f16x16(g + o.dmin);
    for (int t = 0; t < NT; ++t) {
      const __m512 da = _mm512_set1_ps(tok.d[t][b]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(d, da), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M[t]), _mm512_mul_ps(dm, da), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// ---------------------------------------------------------------- F16 x F32 and BF16 x BF16

// F16: converted to F32, one FMA with the broadcast F32 activation.
struct F16Vec {
  using Act = float;
  using W = __m512;
  static constexpr int kIn = 1;
  static W load(const uint8_t* p) { return load_f16x16(p); }
  static __m512 madd(__m512 acc, W w, const float* a) { return _mm512_fmadd_ps(w, _mm512_set1_ps(*a), acc); }
};
// BF16 without the BF16 extension: 2 inputs per int32 lane widened by shifts into two F32
// vectors, multiplied with the broadcast pair of BF16 activations (the row-major Fast path's
// rounding), odd input first as vdpbf16ps does (BF16Vec in kernels_avx512bf16.cpp gives the same
// sums: products of BF16 values are exact in F32).
struct BF16ShiftVec {
  using Act = uint16_t;
  struct W {
    __m512 lo, hi;
  };
  static constexpr int kIn = 2;
  static W load(const uint8_t* p) {
    const __m512i v = _mm512_load_si512(p);
    return {bf16_lo(v), bf16_hi(v)};
  }
  static __m512 madd(__m512 acc, const W& w, const uint16_t* a) {
    const __m512i x = bcast32(a);
    return _mm512_fmadd_ps(w.lo, bf16_lo(x), _mm512_fmadd_ps(w.hi, bf16_hi(x), acc));
  }
};

// Tokens per call: as many as the registers hold (accumulators and partial sums per token).
constexpr int kTileQ32 = 8, kTileQ4K = 8, kTileQ6K = 8, kTileQ3K = 4;

// The GroupFn of each kernel family.
template <Q32 kT>
void q32_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileQ32>(nt, [&](auto k) { group32<kT, decltype(k)::value>(g, n, a, s, y, l); });
}
template <bool kQ5>
void k4_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileQ4K>(nt, [&](auto k) { group_k4<kQ5, decltype(k)::value>(g, n, a, s, y, l); });
}
void q6k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileQ6K>(nt, [&](auto k) { group_q6k<decltype(k)::value>(g, n, a, s, y, l); });
}
void q3k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileQ3K>(nt, [&](auto k) { group_q3k<decltype(k)::value>(g, n, a, s, y, l); });
}
void q2k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  with_nt<kTileQ3K>(nt, [&](auto k) { group_q2k<decltype(k)::value>(g, n, a, s, y, l); });
}

const PackedKernels kPacked = {{q32_fn<Q32::Q4_0>, kTileQ32},
                               {q32_fn<Q32::Q5_0>, kTileQ32},
                               {q32_fn<Q32::Q8_0>, kTileQ32},
                               {k4_fn<false>, kTileQ4K},
                               {k4_fn<true>, kTileQ4K},
                               {q6k_fn, kTileQ6K},
                               {float_fn<F16Vec>, kTileFloat},
                               {float_fn<BF16ShiftVec>, kTileFloat},
                               {q32_fn<Q32::IQ4_NL>, kTileQ32},
                               {q32_fn<Q32::IQ4_XS>, kTileQ32},
                               {q32_fn<Q32::Q4_1>, kTileQ32},
                               {q3k_fn, kTileQ3K},
                               {q2k_fn, kTileQ3K},
                               {q32_fn<Q32::MXFP4>, kTileQ32},
                               {q32_fn<Q32::Q4_Z>, kTileQ32}};

}  // namespace

const PackedKernels& avx512_packed_kernels() {
  return kPacked;
}

}  // namespace ferrum::kernels
