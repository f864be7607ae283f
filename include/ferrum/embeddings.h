// Sentence embeddings from any model through one path: an encoder (BERT) runs each sentence
// with bidirectional attention and no KV cache; a decoder (as Qwen3-Embedding or e5-mistral are
// used) runs each one through a KV cache made for the call and dropped at its end. Either way the
// final hidden states (after the final norm) are pooled and optionally L2-normalized.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ferrum/kv_types.h"
#include "ferrum/model.h"

namespace ferrum {

const char* pooling_name(Pooling p);  // "mean", "cls", "last"
// "mean", "cls", "last"; throws naming the accepted values.
Pooling parse_pooling(const std::string& s);

struct EmbedOptions {
  std::optional<Pooling> pooling;  // unset: the model's own (an encoder's files), else last
  std::optional<bool> normalize;   // unset: as an encoder's files say; decoders: true
  std::optional<KvType> kv_type;   // decoders: the temporary cache's element type; unset = default
};

// The pooling and normalization EmbedOptions come to for `model`. Throws for Cls on a decoder
// (it has no CLS token).
struct EmbedSettings {
  Pooling pooling = Pooling::Last;
  bool normalize = true;
};
EmbedSettings embed_settings(const Model& model, const EmbedOptions& opts);

// Runs `step` with exclusive use of the model (a Model computes one forward at a time): e.g.
// Engine::with_model, so the forwards interleave with the engine's generation steps.
using ModelGuard = std::function<void(const std::function<void(Model&)>& step)>;

// One vector of n_embd floats per token sequence. Sequences are packed into forward batches of
// at most the model's max_batch tokens (a decoder's longer one runs in chunks); a sequence's
// vector does not depend on the rest of the batch. Throws for an empty sequence, an out-of-range
// id, a sequence longer than an encoder's position table, or a model that is a stage.
std::vector<std::vector<float>> embeddings(Model& model, const std::vector<std::vector<int32_t>>& batch,
                                           const EmbedOptions& opts = {});
// The same with every forward run inside `guard`, which hands the model to the step while it
// holds the model's lock; `model` itself is only read (its shape) outside the guard.
std::vector<std::vector<float>> embeddings(const Model& model, const std::vector<std::vector<int32_t>>& batch,
                                           const EmbedOptions& opts, const ModelGuard& guard);

}  // namespace ferrum
