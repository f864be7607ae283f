// The second product of a LoRA adapter, y += u B^T, with B stored transposed (Bt: r rows of `out`
// values, F32 or F16) so that every output is a multiply-add chain along the rank, vectorized over
// the outputs (no horizontal sums: the rank is small, 4 to 64, the outputs many).
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace ferrum::kernels {

// For t < n: y[rows[t] * ldy + o] += sum_{j < r} u[t * ldu + j] * Bt[j, o] for o < out, with
// Bt = bt (ne = {out, r}). Each sum is taken in order of j, one multiply-add per term, the same
// way for any n and any split over threads: a row's result does not depend on the other rows.
void lowrank_up_add(const float* u, int64_t ldu, int64_t n, const TensorView& bt, const int64_t* rows,
                    float* y, int64_t ldy, ThreadPool& pool);

// One thread's part: outputs [o0, o1) of every row (o0, o1 multiples of 16 except o1 = out).
using LowrankFn = void (*)(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0,
                           int64_t o1, const int64_t* rows, float* y, int64_t ldy);
void lowrank_up_add_portable(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0,
                             int64_t o1, const int64_t* rows, float* y, int64_t ldy);
#if defined(__x86_64__)
void lowrank_up_add_avx512(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0,
                           int64_t o1, const int64_t* rows, float* y, int64_t ldy);
void lowrank_up_add_avx2(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0, int64_t o1,
                         const int64_t* rows, float* y, int64_t ldy);
#elif defined(__aarch64__)
void lowrank_up_add_neon(const float* u, int64_t ldu, int64_t n, const TensorView& bt, int64_t o0, int64_t o1,
                         const int64_t* rows, float* y, int64_t ldy);
#endif

}  // namespace ferrum::kernels
