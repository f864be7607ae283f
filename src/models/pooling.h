// Sentence embeddings from per-token final hidden states: pooling (mean over a sequence's tokens,
// its first token, or its last token) and L2 normalization, as models/embeddings.cpp applies
// them to encoders and decoders alike. pooling_name / parse_pooling are in ferrum/embeddings.h.
#pragma once

#include <cstdint>
#include <span>

#include "ferrum/embeddings.h"

namespace ferrum {

// Pools the n rows (d floats each, row-major) of one sequence into out (d floats). Mean sums in
// float64, row by row.
void pool_rows(const float* rows, int64_t n, int64_t d, Pooling p, float* out);
// Scales v to unit L2 length (norm in float64); a zero vector stays zero.
void l2_normalize(std::span<float> v);

}  // namespace ferrum
