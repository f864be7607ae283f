// Internal interface between the matmul driver and the per-ISA kernels (scalar, AVX2, AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant.h"

namespace ferrum::kernels {

// Activation block for the 32-element weight types: Q8_1 with F32 scales. s = d * sum(qs), used to
// apply the weight offsets (Q4_0's -8, Q5_0's -16, Q5_1's min) once per block.
struct BlockQ8_1F {
  float d;
  float s;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1F) == 40);

// One weight row (n inputs) against nt <= kMaxTile tokens of prepared activations:
// y[t*ldy] = dot(w, act_t) with act_t = act + t*act_stride bytes.
constexpr int kMaxTile = 4;
using RowDotFn = void (*)(const uint8_t* w, int64_t n, const uint8_t* act, size_t act_stride, int nt,
                          float* y, int64_t ldy);

struct IsaKernels {
  const char* name;
  float (*dot_f32)(const float* a, const float* b, int64_t n);  // F32 accumulation
  // Fast-path row kernels by weight type; activations: Q8_1F (32-blocks), Q8_K (K-quants), BF16
  // (bf16 weights), F32 (f16/f32 weights).
  RowDotFn q4_0, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k, bf16, f16, f32;
  // Activation preparation; the same numbers on every ISA (round half to even everywhere).
  void (*quantize_q8_1f)(const float* x, BlockQ8_1F* y, int64_t n);
  void (*quantize_q8_k)(const float* x, BlockQ8_K* y, int64_t n);
};

const IsaKernels& scalar_kernels();
const IsaKernels& avx2_kernels();
const IsaKernels& avx512_kernels();
// The kernels in use (see isa.cpp).
const IsaKernels& active_kernels();

}  // namespace ferrum::kernels
