// Prefill of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) through a decoded
// panel. Their row kernels decode each super-block for every tile of up to 4 tokens, and decoding (grid
// gathers, sign bits, scales) costs more than the dot products. With many tokens a work item decodes
// its rows once into a panel of int16 values (level x sign x sub-block scale, exact) and multiplies
// the panel with int16 activations (vpmaddwd / vpdpwssd), so decoding is paid once per 64 tokens.
//
// The sums are the row kernels' sums bit for bit (batch invariance: a token's result does not depend
// on how many tokens share its call): the row kernels add, per super-block, the products of bytes
// 4k..4k+3 of each 32-element chunk into int32 lane k (k < 8), convert, multiply-add with d * a.d into
// float lane k, and sum the 8 lanes at the end in hsum's order. The panel keeps that lane split:
// within each 32-element chunk the 16 element pairs are stored in the order
//   pair 2k (elements 4k, 4k+1) at dword k, pair 2k+1 (4k+2, 4k+3) at dword 8 + k,
// so one vpmaddwd of the first 8 dwords and one of the last 8 give lane k's two halves in lane k.
//
// Panel of nr rows x n inputs: row r's int16 values at panel + r*n (n/256 super-blocks of 8 chunks in
// the order above), then the super-blocks' factors d (float) at the float area: row r's at r * n/256.
// Activations (one token, n inputs): the Q8_K levels as int16 in the same pair order (2n bytes), then
// the n/256 Q8_K scales d (float).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferrum::kernels {

constexpr int kPanelRows = 16;          // rows per panel (a matmul work item)
constexpr int64_t kPanelMinTokens = 8;  // fewer tokens: the row kernels

inline size_t panel_act_bytes(int64_t n) {
  return static_cast<size_t>(2 * n + 4 * (n / 256));
}
// int16 values then floats, for kPanelRows rows of n inputs.
inline size_t panel_bytes(int64_t n) {
  return static_cast<size_t>(kPanelRows) * static_cast<size_t>(2 * n + 4 * (n / 256));
}

}  // namespace ferrum::kernels
