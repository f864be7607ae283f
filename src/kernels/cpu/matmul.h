// Matrix x activations for weights kept in their file format (F32/F16/BF16 and ggml quant blocks).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace ferrum::kernels {

enum class Precision {
  // Activations stay F32; each weight row is dequantized (bit-exact) and dotted in F32 with F32
  // accumulation. The reference path.
  Exact,
  // As llama.cpp: activations quantized to 8 bits (Q8_0-style with sums for the 32-blocks, Q8_K for
  // K-quants) and integer dot products; BF16 weights x BF16-rounded activations; F16/F32 weights x
  // F32 activations.
  Fast,
};

// Grow-only buffers reused across calls (quantized activations, dequantized rows): after the first
// call with the largest shape no call allocates.
struct MatmulScratch {
  std::vector<uint8_t> act;
  std::vector<float> rows;
  std::vector<float> gathered;  // inputs reordered for an act-order matrix (Linear)
  std::vector<uint8_t> panels;  // the grid i-quants' decoded rows, per thread (grid_panel.h)
  std::vector<uint8_t> lanes;   // tiles of tokens interleaved for the lane kernels (packed_act.h)
};

// y[t*ldy + o] = sum_i W[o,i] * x[t*ldx + i] for t < n_tok, o < W.rows(); W.cols() inputs.
void matmul(const TensorView& W, const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy,
            ThreadPool& pool, Precision prec, MatmulScratch& scratch);
// Only output rows [row_begin, row_end) of W; y columns are relative to row_begin.
void matmul_rows(const TensorView& W, int64_t row_begin, int64_t row_end, const float* x, int64_t ldx,
                 int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool, Precision prec,
                 MatmulScratch& scratch);

struct PackedMatrix;  // packed.h
// y = P x for a matrix repacked by pack_matrix (needs a tier with packed kernels: packed_kernels_active()).
// Fast precision only: Q8 activations as in the row-major path.
void matmul_packed(const PackedMatrix& P, const float* x, int64_t ldx, int64_t n_tok, float* y, int64_t ldy,
                   ThreadPool& pool, MatmulScratch& scratch);
// Only output rows [row_begin, row_end) of P (both multiples of 16, or row_end == P.rows); y columns
// are relative to row_begin. (One expert of a stacked MoE matrix.)
void matmul_packed_rows(const PackedMatrix& P, int64_t row_begin, int64_t row_end, const float* x,
                        int64_t ldx, int64_t n_tok, float* y, int64_t ldy, ThreadPool& pool,
                        MatmulScratch& scratch);
bool packed_kernels_active();
// Whether the active tier multiplies packed matrices of type t.
bool packed_kernel_for(DType t);

// The kernel tier in use: "scalar", "avx2", "avx2vnni", "avx512" or "avx512bf16" on x86-64;
// "scalar", "neon" or "neondot" on ARM64. The default is the best the CPU has, or the FERRUM_ISA environment
// variable. force_isa throws ferrum::Error if the CPU lacks it.
const char* active_isa();
void force_isa(const char* name);
// Whether this CPU (and OS) can run the named tier; throws for a name this build has no tier of.
bool isa_supported(const char* name);
// This build's tiers, simplest first (whether or not this CPU runs them).
std::vector<const char*> isa_tiers();
// The tier chosen when FERRUM_ISA is unset: the best this CPU (and OS) runs.
const char* best_isa();

}  // namespace ferrum::kernels
