// Internal interface between the matmul driver and the per-ISA kernels (scalar, AVX2, AVX2 + VNNI,
// AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant.h"
#include "core/quant_mxfp4.h"
#include "core/quant_q4z.h"
#include "kernels/cpu/lowrank.h"

namespace ferrum::kernels {

struct AttentionTileOps;  // attention_tile.h

// Activations for the 32-element weight types, one token of n values: n int8 levels, then n/32
// float scales d (F16-rounded, as llama.cpp's Q8_0 activations), then n/32 float sums
// s = d * sum(levels of the block). This is Q8_1 split into arrays so SIMD kernels load several blocks'
// levels and scales at once; s applies the weight offsets (Q4_0's -8, Q5_0's -16, Q5_1's min, Q4_Z's -z) once
// per block.
struct Q8Act {
  const int8_t* qs;
  const float* d;
  const float* s;
  Q8Act(const uint8_t* p, int64_t n)
      : qs(reinterpret_cast<const int8_t*>(p)), d(reinterpret_cast<const float*>(p + n)), s(d + n / 32) {}
};
inline size_t q8act_bytes(int64_t n) {
  return static_cast<size_t>(n + 8 * (n / 32));
}

// One weight row (n inputs) against nt <= kMaxTile tokens of prepared activations:
// y[t*ldy] = dot(w, act_t) with act_t = act + t*act_stride bytes.
constexpr int kMaxTile = 4;
using RowDotFn = void (*)(const uint8_t* w, int64_t n, const uint8_t* act, size_t act_stride, int nt,
                          float* y, int64_t ldy);
// nr <= kMaxRows weight rows (row r at w + r*w_stride) x nt tokens: y[t*ldy + r]. Tiles of several
// rows share the activation loads; kernels without a multi-row version loop with rows_of.
constexpr int kMaxRows = 4;
using TileFn = void (*)(const uint8_t* w, size_t w_stride, int nr, int64_t n, const uint8_t* act,
                        size_t act_stride, int nt, float* y, int64_t ldy);
template <RowDotFn F>
void rows_of(const uint8_t* w, size_t w_stride, int nr, int64_t n, const uint8_t* act, size_t act_stride,
             int nt, float* y, int64_t ldy) {
  for (int r = 0; r < nr; ++r) F(w + r * w_stride, n, act, act_stride, nt, y + r, ldy);
}

// Kernels for the 16-row packed layouts (packed.h) of one tier; activations prepared as packed_act.h.
struct PackedKernels {
  // One 16-row group (n inputs per row) x nt <= max_nt tokens of prepared activations:
  // y[t*ldy + r] for r < 16.
  using GroupFn = void (*)(const uint8_t* group, int64_t n, const uint8_t* act, size_t act_stride, int nt,
                           float* y, int64_t ldy);
  // The same product over one block of inputs [k0, k0 + n) (group and act advanced to k0), the
  // sums carried between blocks in `partial` (32 floats per token; step: kFirstBlock starts them,
  // kLastBlock writes y): the blocks in order give GroupFn's bits. F16 on the AVX2 and AVX-VNNI
  // tiers; null elsewhere.
  using BlockFn = void (*)(const uint8_t* group, int64_t n, const uint8_t* act, size_t act_stride, int nt,
                           float* partial, int step, float* y, int64_t ldy);
  static constexpr int kFirstBlock = 1, kLastBlock = 2;
  // One 16-row group x kLaneMinTokens <= nt <= kLaneTokens tokens interleaved by
  // interleave_lane_tokens (packed_act.h): the tokens in vector lanes. Q4_K and Q5_K on the AVX2 and
  // AVX-VNNI tiers; null elsewhere. A kernel with it has max_nt kLaneTokens, and its GroupFn takes the
  // shorter tiles.
  using LaneFn = void (*)(const uint8_t* group, int64_t n, const uint8_t* lanes, int nt, float* y,
                          int64_t ldy);
  static constexpr int kLaneMinTokens = 13;
  struct Kernel {
    GroupFn fn;
    int max_nt;
    BlockFn block = nullptr;
    LaneFn lanes = nullptr;
  };
  Kernel q4_0, q5_0, q8_0, q4_k, q5_k, q6_k, f16, bf16;
  Kernel iq4_nl, iq4_xs, q4_1, q3_k, q2_k;  // null on tiers without them (NEON)
  Kernel mxfp4;                             // null on NEON
  Kernel q4_z;                              // null on NEON
  const Kernel& of(DType t) const;          // throws for a type without a kernel here
  bool has(DType t) const;
  const Kernel* find(DType t) const;
};

// Row kernels of the low-bit 256-element types (Q8_K activations; IQ4_XS Q8Act), one file per tier
// (kernels_lowbit.h).
struct LowbitRows {
  TileFn q2_k, q3_k, iq4_xs;
  TileFn iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m;
  // The grid i-quants with many tokens (grid_panel.h): nr <= kPanelRows rows decoded once into
  // `scratch` (panel_bytes(n)) x nt tokens of panel activations; the row kernels' bits. Null on
  // tiers without them (then the row kernels).
  using PanelFn = void (*)(const uint8_t* w, size_t w_stride, int nr, int64_t n, const uint8_t* act,
                           size_t act_stride, int nt, float* y, int64_t ldy, uint8_t* scratch);
  PanelFn iq2_xxs_panel = nullptr, iq2_xs_panel = nullptr, iq2_s_panel = nullptr, iq3_xxs_panel = nullptr,
          iq3_s_panel = nullptr, iq1_s_panel = nullptr, iq1_m_panel = nullptr;
  void (*panel_act)(const BlockQ8_K& q, int16_t* levels) = nullptr;  // a Q8_K block's levels in pair order
};

struct IsaKernels {
  const char* name;
  // Fast-path row kernels by weight type; activations: Q8Act (32-element blocks), Q8_K (256-element
  // super-blocks), BF16 (bf16 weights), F32 (f16/f32 weights).
  TileFn q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, mxfp4, q4_z;
  TileFn q4_k, q5_k, q6_k;
  LowbitRows lowbit;
  TileFn bf16, f16, f32;
  // Activation preparation; the same numbers on every ISA (round half to even everywhere).
  void (*quantize_q8_1f)(const float* x, uint8_t* y, int64_t n);  // Q8Act layout
  void (*quantize_q8_k)(const float* x, BlockQ8_K* y, int64_t n);
  // Exact F16 -> F32 row conversion (the Exact path's dequantization of F16 weights, F16 KV rows).
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  // x = softmax(x) in place (exponentials summed in double); out = silu(gate) * up.
  void (*softmax)(float* x, int64_t n);
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  // out = gelu_tanh(gate) * up, computed as gate * up / (1 + e^-y), y = 2 sqrt(2/pi) (g + 0.044715 g^3)
  // (0.5 (1 + tanh z) is the logistic function of 2z).
  void (*geglu)(const float* gate, const float* up, float* out, int64_t n);
  // x = x/2 (1 + erf(x/sqrt 2)) in place (GELU, erf form). SIMD tiers: erf by Abramowitz &
  // Stegun 7.1.26 (|error| <= 1.5e-7) over the tier's exp; scalar: std::erf.
  void (*gelu)(float* x, int64_t n);
  // Kernels for the packed layouts (null: this tier multiplies the file's rows only).
  const PackedKernels* packed;
  // Attention tile steps for head sizes that are multiples of tile_head_multiple (null, or other
  // head sizes: the generic steps).
  const AttentionTileOps* tile_ops;
  int tile_head_multiple;
  // y += u B^T for LoRA adapters (lowrank.h).
  LowrankFn lowrank;
};

// IsaKernels::geglu's y = g (C1 + C3 g^2): C1 = 2 sqrt(2/pi), C3 = C1 * 0.044715.
constexpr float kGeluTanhC1 = 1.5957691216057308f;
constexpr float kGeluTanhC3 = 1.5957691216057308f * 0.044715f;

// Each architecture's tiers (cpu_tiers_x86.cpp, cpu_tiers_arm.cpp); a build has only its own.
const IsaKernels& scalar_kernels();
#if defined(__x86_64__)
const PackedKernels& avx512_packed_kernels();      // F/BW/VL/DQ + VNNI
const PackedKernels& avx512bf16_packed_kernels();  // and vdpbf16ps for BF16
const PackedKernels& avx2_packed_kernels();     // vpmaddubsw: AVX2 + FMA + F16C
const PackedKernels& avxvnni_packed_kernels();  // VEX vpdpbusd on 256-bit registers
const IsaKernels& avx2_kernels();
const IsaKernels& avx2vnni_kernels();
const IsaKernels& avx512_kernels();
const IsaKernels& avx512bf16_kernels();
#elif defined(__aarch64__)
const IsaKernels& neon_kernels();     // ARMv8.0 Advanced SIMD
const IsaKernels& neondot_kernels();  // and the dot-product extension (SDOT)
// Their packed products (packed_neon.h: SMLAL, SDOT by lane).
const PackedKernels& neon_packed_kernels();
const PackedKernels& neondot_packed_kernels();
#endif
// The kernels in use (see isa.cpp).
const IsaKernels& active_kernels();
// The named tier's kernels; nullptr if this CPU lacks it (throws for a name this build lacks).
const IsaKernels* isa_kernels(const char* name);

}  // namespace ferrum::kernels
