// Sentence embeddings from a decoder (as Qwen3-Embedding or e5-mistral are used): each token
// sequence runs through the model with a KV cache of its own, and its final hidden states (after
// the final norm, before the LM head) are pooled (the last token's row, or the mean of all rows)
// and optionally L2-normalized.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferrum/model.h"
#include "models/pooling.h"

namespace ferrum {

struct DecoderEmbedOptions {
  Pooling pooling = Pooling::Last;  // Last or Mean (a decoder has no CLS token)
  bool normalize = true;
  std::string kv_type;  // element type of the temporary KV cache; empty = KvOptions' default (f16)
};

// Runs `step` with exclusive use of the model (a Model computes one forward at a time): e.g.
// Engine::with_model, so the forwards interleave with the engine's generation steps.
using ModelGuard = std::function<void(const std::function<void(Model&)>& step)>;

// One vector of n_embd floats per sequence. Sequences are packed into forward batches of at most
// the model's max_batch tokens (a longer one runs in chunks); a sequence's vector does not depend
// on the rest of the batch. The KV cache is created for the call and dropped at its end. Throws
// for an empty sequence, an out-of-range id, a model that is a stage (it must run from layer 0 to
// the last), or Cls pooling.
std::vector<std::vector<float>> decoder_embeddings(Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const DecoderEmbedOptions& opts);
// The same with every forward run inside `guard`, which hands `model` to the step (mutable) while
// it holds the model's lock; `model` itself is only read (its shape) outside the guard.
std::vector<std::vector<float>> decoder_embeddings(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& batch,
                                                   const DecoderEmbedOptions& opts, const ModelGuard& guard);

}  // namespace ferrum
