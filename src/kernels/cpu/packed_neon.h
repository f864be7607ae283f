// The packed products (packed.h layouts) on 128-bit NEON registers, for the NEON tier (ARMv8.0
// Advanced SIMD: integer dot products with SMLAL) and the NEON + dot-product tier (SDOT). Included
// only by packed_neon.cpp and packed_neondot.cpp, each compiled for its tier: everything here has
// internal linkage, so the two tiers' instantiations never mix.
//
// A 16-row group is read as four quarters of 4 rows: a q register holds 4 inputs of 4 rows ("[16
// rows][4]" is 4 registers), so one SDOT by lane against 4 of a token's activation bytes advances
// the 4 row sums, and every loaded weight register serves all NT tokens of the pass. A token's
// activations are loaded 16 bytes (4 steps) at a time and used by lane: no broadcasts. With 32
// registers a pass takes all 4 quarters for few tokens (a gemv streams each group once) and fewer
// quarters for more tokens (Tiles below; a quarter's bytes are in L1 or L2 when the next pass reads
// them).
//
// Weights are multiplied as signed bytes (SDOT and SMLAL are signed x signed; the mixed-sign USDOT
// needs ARMv8.6's I8MM): the nibbles (0..15) and the 5- and 6-bit values of Q5_K (0..31) and Q6_K
// (0..63) fit int8 as they are, and the offsets of Q4_0 (8) and Q6_K (32) come from the
// activations' biases, as on x86 (Q4_K and Q5_K have none: their mins use the level sums). Q8_0's
// bytes (+128) become the file's levels again by XOR 0x80, and Q5_0's values are built as q - 16
// directly (the fifth bit inserted inverted), so those two need no bias. Integer sums are exact and
// the float steps per block are those of the x86 tiers, lane for lane: a token's result never
// depends on the other tokens of the call, and both NEON tiers give the bits of the x86 ones.
#pragma once

#include <arm_neon.h>

#include <cstring>
#include <type_traits>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/packed.h"
#include "kernels/cpu/packed_act.h"
#include "kernels/cpu/static_for.h"

namespace ferrum::kernels {
namespace {  // internal linkage: one copy per tier's translation unit

template <int N>
using ic = std::integral_constant<int, N>;

// 4 F16 values (one per row of a quarter) as floats (FCVTL: exact, in ARMv8.0).
inline float32x4_t f16x4(const uint8_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
}
// 4 bytes (one per row of a quarter) widened to int32 lanes, unsigned or signed.
inline int32x4_t u8x4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(v)))));
}
inline int32x4_t s8x4(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return vmovl_s16(vget_low_s16(vmovl_s8(vcreate_s8(v))));
}
inline int8x16_t s8(uint8x16_t v) {
  return vreinterpretq_s8_u8(v);
}
// Q5's fifth bits: per step a 64-bit mask for the low nibbles, then one for the high nibbles (bit
// 4r+i: byte i of row r, so a quarter's 16 bytes take 16 consecutive bits). quarter_masks loads
// them from h + 2 * quarter, so that bytes 0-1 hold the quarter's bits of the low mask and bytes 8-9
// those of the high one (the bytes read past a step's 16 are the next step's masks or the nibbles:
// in the group), and spread_bits gives 0xFF in byte k where bit k is set in the low (half 0) or
// high (half 1) mask: one TBL and one CMTST, two constants whatever the quarter.
inline uint8x16_t quarter_masks(const uint8_t* h, int quarter) {
  return vld1q_u8(h + 2 * quarter);
}
inline uint8x16_t spread_bits(uint8x16_t m, int half) {
  static constexpr uint8_t kIdx[2][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                          {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9}};
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vtstq_u8(vqtbl1q_u8(m, vld1q_u8(kIdx[half])), vld1q_u8(kBit));
}

// ---------------------------------------------------------------- integer dot-product policies
// Acc: the partial sums of one quarter (4 rows) and one token. step<L> adds the dot products of w
// (4 inputs of each of the 4 rows) with bytes 4L..4L+3 of a; rows() gives the 4 int32 row sums once
// flush() has followed the last step. A kernel flushes every steps_per_flush(wmax) steps for weights
// |w| <= wmax (activation levels are within [-127, 127]: the quantizers scale by 127 / amax).

// ARMv8.0: 16-bit products (SMLAL; r01 lane 4r+i: byte i of row r, r23 rows 2-3) folded into the
// int32 row sums by pairwise adds (ADDP, then SADALP) before a pair of lanes can overflow 16 bits.
struct DotSmlal {
  struct Acc {
    int16x8_t r01, r23;
    int32x4_t w;
  };
  static constexpr int steps_per_flush(int wmax) { return 32767 / (2 * 127 * wmax); }
  static Acc start(int32x4_t init) { return {vdupq_n_s16(0), vdupq_n_s16(0), init}; }
  template <int L>
  static void step(Acc& p, int8x16_t w, int8x16_t a) {
    const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
    p.r01 = vmlal_s8(p.r01, vget_low_s8(w), vget_low_s8(b));
    p.r23 = vmlal_high_s8(p.r23, w, b);
  }
  static void flush(Acc& p) {
    p.w = vpadalq_s16(p.w, vpaddq_s16(p.r01, p.r23));
    p.r01 = p.r23 = vdupq_n_s16(0);
  }
  static int32x4_t rows(const Acc& p) { return p.w; }
};

#if defined(__ARM_FEATURE_DOTPROD)
// ARMv8.2 dot product: one SDOT by lane per step, the sums int32 throughout.
struct DotSdot {
  struct Acc {
    int32x4_t w;
  };
  static constexpr int steps_per_flush(int) { return 1 << 20; }
  static Acc start(int32x4_t init) { return {init}; }
  template <int L>
  static void step(Acc& p, int8x16_t w, int8x16_t a) {
    p.w = vdotq_laneq_s32(p.w, w, a, L);
  }
  static void flush(Acc&) {}
  static int32x4_t rows(const Acc& p) { return p.w; }
};
#endif

// A pass handles Q quarters of the group from quarter Q0 for NT tokens; everything it computes for
// one (quarter, token) is the same whatever Q, Q0 and NT. Passes are kept out of line (one function
// per shape), their loops over quarters and tokens unrolled (each_qt) so that the arrays of
// registers stay in registers.
template <int Q, int NT, class F>
inline void each_qt(F&& f) {
  static_for<Q>([&](auto qq) { static_for<NT>([&](auto t) { f(qq, t); }); });
}

// ---------------------------------------------------------------- Q4_0 / Q5_0 / Q8_0

enum class Q32 { Q4_0, Q5_0, Q8_0 };

// Per quarter, token and block: 8 dot-product steps (from the block's bias for Q4_0), one
// conversion, one multiply of the scales and one fused multiply-add.
template <class D, Q32 kT, int NT, int Q, int Q0>
[[gnu::noinline]] void pass32(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y,
                              int64_t ldy) {
  const int64_t nb = n / 32;
  constexpr size_t kQs = kT == Q32::Q8_0 ? 512 : kT == Q32::Q5_0 ? 320 : 256;
  constexpr int kFlush = D::steps_per_flush(kT == Q32::Q8_0 ? 128 : kT == Q32::Q5_0 ? 16 : 15);
  const PackedTokens<32, int32_t, NT> tok(act, stride, n);
  float32x4_t acc[Q][NT];
  each_qt<Q, NT>([&](int qq, int t) { acc[qq][t] = vdupq_n_f32(0.0f); });
  for (int64_t b = 0; b < nb; ++b) {
    const Q32Offsets o = q32_offsets(b, kQs);
    const uint8_t* q = g + o.qs;
    int8x16_t a[NT][2];  // the block's 32 levels
    static_for<NT>([&](auto t) {
      a[t][0] = vld1q_s8(tok.qs[t] + 32 * b);
      a[t][1] = vld1q_s8(tok.qs[t] + 32 * b + 16);
    });
    typename D::Acc p[Q][NT];
    each_qt<Q, NT>([&](int qq, int t) {
      p[qq][t] = D::start(kT == Q32::Q4_0 ? vld1q_dup_s32(tok.sums[t] + b) : vdupq_n_s32(0));
    });
    if constexpr (kT == Q32::Q8_0) {
      static_for<8>([&](auto j) {
        static_for<Q>([&](auto qq) {
          const int8x16_t w = s8(veorq_u8(vld1q_u8(q + 64 * j + 16 * (Q0 + qq)), vdupq_n_u8(0x80)));
          static_for<NT>([&](auto t) { D::template step<j % 4>(p[qq][t], w, a[t][j / 4]); });
        });
        if constexpr ((j + 1) % kFlush == 0 || j == 7)
          each_qt<Q, NT>([&](int qq, int t) { D::flush(p[qq][t]); });
      });
    } else {
      // Q5_0: per step a 64-bit mask of fifth bits for the low nibbles and one for the high ones,
      // then the nibbles.
      constexpr size_t kL = kT == Q32::Q5_0 ? 64 : 0;
      static_for<4>([&](auto j) {
        static_for<Q>([&](auto qq) {
          const int r = Q0 + qq;
          const uint8x16_t v = vld1q_u8(q + kL + 64 * j + 16 * r);
          uint8x16_t lo, hi;
          if constexpr (kT == Q32::Q5_0) {
            // q - 16: the nibble with 0xF0 above it (-16 + nibble) where the fifth bit is clear.
            const uint8x16_t clear = vmvnq_u8(quarter_masks(q + 16 * j, r));
            lo = vsliq_n_u8(v, spread_bits(clear, 0), 4);
            hi = vsriq_n_u8(spread_bits(clear, 1), v, 4);
          } else {
            lo = vandq_u8(v, vdupq_n_u8(0x0F));
            hi = vshrq_n_u8(v, 4);
          }
          static_for<NT>([&](auto t) {
            D::template step<j>(p[qq][t], s8(lo), a[t][0]);
            D::template step<j>(p[qq][t], s8(hi), a[t][1]);
          });
        });
        if constexpr ((2 * j + 2) % kFlush == 0 || j == 3)
          each_qt<Q, NT>([&](int qq, int t) { D::flush(p[qq][t]); });
      });
    }
    static_for<Q>([&](auto qq) {
      const float32x4_t dw = f16x4(g + o.d + 8 * (Q0 + qq));
      static_for<NT>([&](auto t) {
        acc[qq][t] = vfmaq_f32(acc[qq][t], vcvtq_f32_s32(D::rows(p[qq][t])), vmulq_n_f32(dw, tok.d[t][b]));
      });
    });
  }
  each_qt<Q, NT>([&](int qq, int t) { vst1q_f32(y + t * ldy + 4 * (Q0 + qq), acc[qq][t]); });
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// Q4_K, or Q5_K with kQ5. Per sub-block 8 dot-product steps, scaled by its 6-bit scale in integers
// (one MLA: exact, |sum| < 2^31); the mins term is 8 multiply-adds by lane per super-block (the
// mins of a quarter regrouped by sub-block once, for all tokens), and the super-block ends in two
// fused multiply-adds per token. Q5_K's fifth bits are inserted as 16 (values 0..31).
template <class D, bool kQ5, int NT, int Q, int Q0>
[[gnu::noinline]] void pass_k4(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y,
                               int64_t ldy) {
  const int64_t nsb = n / 256;
  constexpr size_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes,
                   kChunk = kQ5 ? kQ5KChunkBytes : kQ4KChunkBytes;
  constexpr size_t kNib = kQ5 ? kQ5KMaskBytes : 0;
  constexpr int kFlush = D::steps_per_flush(kQ5 ? 31 : 15);
  // A chunk's two sub-blocks (low nibbles: sub-block 2c, high: 2c+1) in one sweep over its 8
  // steps, or, for a single quarter, one after the other: two activation registers per token and
  // sub-block instead of four (the quarter's 8 weight registers stay loaded between the two).
  constexpr int kH = Q == 1 ? 1 : 2;
  const PackedTokens<256, int16_t, NT> tok(act, stride, n);
  float32x4_t acc[Q][NT];
  each_qt<Q, NT>([&](int qq, int t) { acc[qq][t] = vdupq_n_f32(0.0f); });
  for (int64_t b = 0; b < nsb; ++b) {
    const Q4KOffsets o = q4k_offsets(b, kBlock);
    int32x4_t S[Q][NT];
    each_qt<Q, NT>([&](int qq, int t) { S[qq][t] = vdupq_n_s32(0); });
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = g + o.qs + c * kChunk;
      static_for<2 / kH>([&](auto s0) {
        int8x16_t a[kH][NT][2];
        typename D::Acc p[kH][Q][NT];
        static_for<kH>([&](auto hh) {
          static_for<NT>([&](auto t) {
            a[hh][t][0] = vld1q_s8(tok.qs[t] + 256 * b + 64 * c + 32 * (s0 + hh));
            a[hh][t][1] = vld1q_s8(tok.qs[t] + 256 * b + 64 * c + 32 * (s0 + hh) + 16);
          });
          each_qt<Q, NT>([&](int qq, int t) { p[hh][qq][t] = D::start(vdupq_n_s32(0)); });
        });
        static_for<8>([&](auto j) {
          static_for<Q>([&](auto qq) {
            const uint8x16_t v = vld1q_u8(q + kNib + 64 * j + 16 * (Q0 + qq));
            [[maybe_unused]] uint8x16_t m;
            if constexpr (kQ5) m = quarter_masks(q + 16 * j, Q0 + qq);
            static_for<kH>([&](auto hh) {
              constexpr int s = s0 + hh;
              uint8x16_t w = s ? vshrq_n_u8(v, 4) : vandq_u8(v, vdupq_n_u8(0x0F));
              if constexpr (kQ5) w = vbslq_u8(vdupq_n_u8(0x10), spread_bits(m, s), w);
              static_for<NT>([&](auto t) { D::template step<j % 4>(p[hh][qq][t], s8(w), a[hh][t][j / 4]); });
            });
          });
          if constexpr ((j + 1) % kFlush == 0 || j == 7)
            static_for<kH>([&](auto hh) { each_qt<Q, NT>([&](int qq, int t) { D::flush(p[hh][qq][t]); }); });
        });
        static_for<kH>([&](auto hh) {
          static_for<Q>([&](auto qq) {
            const int32x4_t sc = u8x4(g + o.sc + 16 * (2 * c + s0 + hh) + 4 * (Q0 + qq));
            static_for<NT>([&](auto t) { S[qq][t] = vmlaq_s32(S[qq][t], D::rows(p[hh][qq][t]), sc); });
          });
        });
      });
    }
    static_for<Q>([&](auto qq) {
      const int r = Q0 + qq;
      // The quarter's mins (pairs [4 rows][2] at mn + 32 pr) as int16 [sub-block][4 rows]: even
      // sub-blocks 0, 2 | 4, 6 and odd ones 1, 3 | 5, 7.
      const uint8x16_t p01 = vcombine_u8(vld1_u8(g + o.mn + 8 * r), vld1_u8(g + o.mn + 32 + 8 * r));
      const uint8x16_t p23 = vcombine_u8(vld1_u8(g + o.mn + 64 + 8 * r), vld1_u8(g + o.mn + 96 + 8 * r));
      const uint8x16_t ev = vuzp1q_u8(p01, p23), od = vuzp2q_u8(p01, p23);
      const int16x8_t e02 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(ev)));
      const int16x8_t e46 = vreinterpretq_s16_u16(vmovl_high_u8(ev));
      const int16x8_t o13 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(od)));
      const int16x8_t o57 = vreinterpretq_s16_u16(vmovl_high_u8(od));
      const float32x4_t d = f16x4(g + o.d + 8 * r), dm = f16x4(g + o.dmin + 8 * r);
      static_for<NT>([&](auto t) {
        const int16x8_t bs = vld1q_s16(tok.sums[t] + 8 * b);  // level sums of the 8 sub-blocks
        int32x4_t M = vmull_laneq_s16(vget_low_s16(e02), bs, 0);
        M = vmlal_high_laneq_s16(M, e02, bs, 2);
        M = vmlal_laneq_s16(M, vget_low_s16(e46), bs, 4);
        M = vmlal_high_laneq_s16(M, e46, bs, 6);
        M = vmlal_laneq_s16(M, vget_low_s16(o13), bs, 1);
        M = vmlal_high_laneq_s16(M, o13, bs, 3);
        M = vmlal_laneq_s16(M, vget_low_s16(o57), bs, 5);
        M = vmlal_high_laneq_s16(M, o57, bs, 7);
        const float da = tok.d[t][b];
        acc[qq][t] = vfmaq_f32(acc[qq][t], vcvtq_f32_s32(S[qq][t]), vmulq_n_f32(d, da));
        acc[qq][t] = vfmsq_f32(acc[qq][t], vcvtq_f32_s32(M), vmulq_n_f32(dm, da));
      });
    });
  }
  each_qt<Q, NT>([&](int qq, int t) { vst1q_f32(y + t * ldy + 4 * (Q0 + qq), acc[qq][t]); });
}

// ---------------------------------------------------------------- Q6_K

// One sub-block at a time (4 steps from its bias, then one MLA by its int8 scale), so one partial
// per quarter and token is live: per 4 inputs j of a 128-element half, L j, L j+8 and H j give 4
// vectors of 6-bit values (sub-blocks j/4, 4+j/4, 2+j/4, 6+j/4 of the half), each built in 2-3
// shift/insert steps when its sub-block comes (the L and H loads repeat, from L1).
template <int v>
inline uint8x16_t q6_values(uint8x16_t l, uint8x16_t h) {
  const uint8x16_t m3 = vdupq_n_u8(0x03), m30 = vdupq_n_u8(0x30);
  if constexpr (v == 0) return vsliq_n_u8(l, vandq_u8(h, m3), 4);   // low nibble | bits 0-1 of h
  if constexpr (v == 1) return vsriq_n_u8(vandq_u8(h, m30), l, 4);  // high nibble | bits 4-5
  if constexpr (v == 2) return vsliq_n_u8(l, vandq_u8(vshrq_n_u8(h, 2), m3), 4);   // | bits 2-3
  if constexpr (v == 3) return vsriq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m30), l, 4);  // | bits 6-7
}

template <class D, int NT, int Q, int Q0>
[[gnu::noinline]] void pass_q6k(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y,
                                int64_t ldy) {
  const int64_t nsb = n / 256;
  constexpr int kFlush = D::steps_per_flush(63);
  const PackedTokens<256, int32_t, NT> tok(act, stride, n);
  float32x4_t acc[Q][NT];
  each_qt<Q, NT>([&](int qq, int t) { acc[qq][t] = vdupq_n_f32(0.0f); });
  for (int64_t b = 0; b < nsb; ++b) {
    const Q6KOffsets o = q6k_offsets(b);
    const uint8_t* q = g + o.qs;
    int32x4_t S[Q][NT];
    each_qt<Q, NT>([&](int qq, int t) { S[qq][t] = vdupq_n_s32(0); });
    for (int k = 0; k < 2; ++k) {  // the super-block's 128-element halves
      static_for<4>([&](auto v) {  // which of the 4 values of a step: sub-blocks (0, 4, 2, 6) + j/4
        constexpr int kSub = q6k_value_sub_block(v);
        for (int jq = 0; jq < 2; ++jq) {
          const int sb = 8 * k + kSub + jq;
          int8x16_t a[NT];  // the sub-block's 16 levels
          static_for<NT>([&](auto t) { a[t] = vld1q_s8(tok.qs[t] + 256 * b + 16 * sb); });
          typename D::Acc p[Q][NT];
          each_qt<Q, NT>(
              [&](int qq, int t) { p[qq][t] = D::start(vld1q_dup_s32(tok.sums[t] + 16 * b + sb)); });
          static_for<4>([&](auto i) {
            const int j = 4 * jq + i;
            static_for<Q>([&](auto qq) {
              const int r = Q0 + qq;
              const uint8x16_t w = q6_values<v>(vld1q_u8(q + q6k_l(k, v < 2 ? j : j + 8) + 16 * r),
                                                vld1q_u8(q + q6k_h(k, j) + 16 * r));
              static_for<NT>([&](auto t) { D::template step<i>(p[qq][t], s8(w), a[t]); });
            });
            if constexpr ((i + 1) % kFlush == 0 || i == 3)
              each_qt<Q, NT>([&](int qq, int t) { D::flush(p[qq][t]); });
          });
          static_for<Q>([&](auto qq) {
            const int32x4_t sc = s8x4(g + o.sc + 16 * sb + 4 * (Q0 + qq));
            static_for<NT>([&](auto t) { S[qq][t] = vmlaq_s32(S[qq][t], D::rows(p[qq][t]), sc); });
          });
        }
      });
    }
    static_for<Q>([&](auto qq) {
      const float32x4_t d = f16x4(g + o.d + 8 * (Q0 + qq));
      static_for<NT>([&](auto t) {
        acc[qq][t] = vfmaq_f32(acc[qq][t], vcvtq_f32_s32(S[qq][t]), vmulq_n_f32(d, tok.d[t][b]));
      });
    });
  }
  each_qt<Q, NT>([&](int qq, int t) { vst1q_f32(y + t * ldy + 4 * (Q0 + qq), acc[qq][t]); });
}

// ---------------------------------------------------------------- F16 x F32 and BF16 x BF16
// Per 4 inputs one activation register per token, used by lane; even and odd inputs in separate
// accumulators (the x86 kernels' order, so results are theirs, and a lone token is not bound by
// the FMA latency).

template <int NT, int Q, int Q0>
[[gnu::noinline]] void pass_f16(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y,
                                int64_t ldy) {
  const float* a[NT];
  static_for<NT>([&](auto t) { a[t] = reinterpret_cast<const float*>(act + t * stride); });
  float32x4_t e[Q][NT], od[Q][NT];
  each_qt<Q, NT>([&](int qq, int t) { e[qq][t] = od[qq][t] = vdupq_n_f32(0.0f); });
  for (int64_t k = 0; k < n; k += 4) {
    float32x4_t x[NT];
    static_for<NT>([&](auto t) { x[t] = vld1q_f32(a[t] + k); });
    static_for<4>([&](auto i) {  // input k + i: [16 rows] F16 at 32 (k + i)
      static_for<Q>([&](auto qq) {
        const float32x4_t w = f16x4(g + 32 * (k + i) + 8 * (Q0 + qq));
        static_for<NT>([&](auto t) {
          if constexpr (i % 2 == 0)
            e[qq][t] = vfmaq_laneq_f32(e[qq][t], w, x[t], i);
          else
            od[qq][t] = vfmaq_laneq_f32(od[qq][t], w, x[t], i);
        });
      });
    });
  }
  each_qt<Q, NT>(
      [&](int qq, int t) { vst1q_f32(y + t * ldy + 4 * (Q0 + qq), vaddq_f32(e[qq][t], od[qq][t])); });
}

// BF16 pairs (inputs 2p, 2p+1 of a row in one 32-bit lane) widened by a shift (even input) and a
// mask (odd input); the odd input is added before the even one, as vdpbf16ps does (products of
// BF16 values are exact in F32).
template <int NT, int Q, int Q0>
[[gnu::noinline]] void pass_bf16(const uint8_t* g, int64_t n, const uint8_t* act, size_t stride, float* y,
                                 int64_t ldy) {
  const uint16_t* a[NT];
  static_for<NT>([&](auto t) { a[t] = reinterpret_cast<const uint16_t*>(act + t * stride); });
  float32x4_t e[Q][NT], od[Q][NT];
  each_qt<Q, NT>([&](int qq, int t) { e[qq][t] = od[qq][t] = vdupq_n_f32(0.0f); });
  const uint32x4_t hi_mask = vdupq_n_u32(0xFFFF0000u);
  for (int64_t k = 0; k < n; k += 4) {
    float32x4_t x[NT];
    static_for<NT>([&](auto t) { x[t] = vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(a[t] + k), 16)); });
    static_for<Q>([&](auto qq) {
      const int r = Q0 + qq;
      const uint32x4_t w0 = vld1q_u32(reinterpret_cast<const uint32_t*>(g + 32 * k + 16 * r));
      const uint32x4_t w1 = vld1q_u32(reinterpret_cast<const uint32_t*>(g + 32 * k + 64 + 16 * r));
      const float32x4_t e0 = vreinterpretq_f32_u32(vshlq_n_u32(w0, 16));
      const float32x4_t o0 = vreinterpretq_f32_u32(vandq_u32(w0, hi_mask));
      const float32x4_t e1 = vreinterpretq_f32_u32(vshlq_n_u32(w1, 16));
      const float32x4_t o1 = vreinterpretq_f32_u32(vandq_u32(w1, hi_mask));
      static_for<NT>([&](auto t) {
        e[qq][t] = vfmaq_laneq_f32(vfmaq_laneq_f32(e[qq][t], o0, x[t], 1), e0, x[t], 0);
        od[qq][t] = vfmaq_laneq_f32(vfmaq_laneq_f32(od[qq][t], o1, x[t], 3), e1, x[t], 2);
      });
    });
  }
  each_qt<Q, NT>(
      [&](int qq, int t) { vst1q_f32(y + t * ldy + 4 * (Q0 + qq), vaddq_f32(e[qq][t], od[qq][t])); });
}

// ---------------------------------------------------------------- the tier's table

// Tokens per call (kMax) and per pass: all 4 quarters in one pass up to kQ4 tokens, two passes of
// 2 quarters up to kQ2, else 4 passes of one; as many as the 32 registers hold (per quarter and
// token an accumulator, the partial sums (SMLAL: 3 registers, SDOT: 1), the K-quants' int32 sum).
template <class D>
struct Tiles {
  static constexpr bool kSmlal = std::is_same_v<D, DotSmlal>;
  struct Q32 {
    static constexpr int kMax = kSmlal ? 4 : 6, kQ4 = kSmlal ? 1 : 2, kQ2 = kSmlal ? 2 : 4;
  };
  struct K {
    static constexpr int kMax = kSmlal ? 3 : 5, kQ4 = 1, kQ2 = kSmlal ? 1 : 2;
  };
  struct Float {
    static constexpr int kMax = 8, kQ4 = 2, kQ2 = 4;
  };
};

// pass(ic<NT>, ic<Q>, ic<Q0>) over the quarters of a group for the tile's nt tokens.
template <class T, class Pass>
inline void quarters(int nt, Pass&& pass) {
  with_nt<T::kMax>(nt, [&](auto k) {
    if constexpr (decltype(k)::value <= T::kQ4) {
      pass(k, ic<4>{}, ic<0>{});
    } else if constexpr (decltype(k)::value <= T::kQ2) {
      pass(k, ic<2>{}, ic<0>{});
      pass(k, ic<2>{}, ic<2>{});
    } else {
      static_for<4>([&](auto q0) { pass(k, ic<1>{}, q0); });
    }
  });
}

// The GroupFn of each kernel family.
template <class D, Q32 kT>
void q32_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  quarters<typename Tiles<D>::Q32>(nt, [&](auto k, auto q, auto q0) {
    pass32<D, kT, decltype(k)::value, decltype(q)::value, decltype(q0)::value>(g, n, a, s, y, l);
  });
}
template <class D, bool kQ5>
void k4_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  quarters<typename Tiles<D>::K>(nt, [&](auto k, auto q, auto q0) {
    pass_k4<D, kQ5, decltype(k)::value, decltype(q)::value, decltype(q0)::value>(g, n, a, s, y, l);
  });
}
template <class D>
void q6k_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  quarters<typename Tiles<D>::K>(nt, [&](auto k, auto q, auto q0) {
    pass_q6k<D, decltype(k)::value, decltype(q)::value, decltype(q0)::value>(g, n, a, s, y, l);
  });
}
template <class D>
void f16_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  quarters<typename Tiles<D>::Float>(nt, [&](auto k, auto q, auto q0) {
    pass_f16<decltype(k)::value, decltype(q)::value, decltype(q0)::value>(g, n, a, s, y, l);
  });
}
template <class D>
void bf16_fn(const uint8_t* g, int64_t n, const uint8_t* a, size_t s, int nt, float* y, int64_t l) {
  quarters<typename Tiles<D>::Float>(nt, [&](auto k, auto q, auto q0) {
    pass_bf16<decltype(k)::value, decltype(q)::value, decltype(q0)::value>(g, n, a, s, y, l);
  });
}

template <class D>
constexpr PackedKernels neon_packed_table() {
  using T = Tiles<D>;
  return {{q32_fn<D, Q32::Q4_0>, T::Q32::kMax},
          {q32_fn<D, Q32::Q5_0>, T::Q32::kMax},
          {q32_fn<D, Q32::Q8_0>, T::Q32::kMax},
          {k4_fn<D, false>, T::K::kMax},
          {k4_fn<D, true>, T::K::kMax},
          {q6k_fn<D>, T::K::kMax},
          {f16_fn<D>, T::Float::kMax},
          {bf16_fn<D>, T::Float::kMax},
          {nullptr, 0},
          {nullptr, 0},
          {nullptr, 0},
          {nullptr, 0},
          {nullptr, 0},
          {nullptr, 0},
          {nullptr, 0}};  // IQ4_NL, IQ4_XS, Q4_1, Q3_K, Q2_K, MXFP4, Q4_Z: not packed on NEON
}

}  // namespace
}  // namespace ferrum::kernels
