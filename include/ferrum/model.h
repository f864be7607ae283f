// The model interface every decoder implements. A model holds weights and computes; the KV
// cache is a separate object (ferrum/kv_cache.h) the caller owns and passes to forward().
//
// One forward batch lists, per sequence, its new inputs (token ids or input rows) and what it
// wants back (logits and/or hidden states of the last or every new position). A model may be
// loaded as a stage: a layer range [layer_begin, layer_end) of the full network, with or
// without the LM head, so a full model equals its stages chained.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferrum/kv_cache.h"
#include "ferrum/model_config.h"

namespace ferrum {

class LoraAdapter;          // ferrum/lora.h
class TensorParallelGroup;  // src/models/tensor_parallel.h

// Exact: activations stay F32 in every matmul (reference path).
// Fast:  activations are quantized/rounded to the weight type's partner as llama.cpp does.
// BF16:  as Fast, and F16/F32 weight matrices are rounded to BF16 once at load (round to nearest
//        even, as `ferrum quantize ... BF16` does) and multiplied as a BF16 file's (BF16 dot
//        products: about twice the F16 throughput where the CPU has AVX512-BF16). The logits are
//        those of the model's BF16 conversion (embeddings, norms and the KV cache are unchanged).
enum class Precision { Exact, Fast, BF16 };

struct ModelOptions {
  int n_threads = 0;  // 0 = all available cores
  Precision precision = Precision::Fast;
  int64_t max_batch = 256;  // tokens per internal forward chunk of prefill()
  // Stage: the layers [layer_begin, layer_end) of the network (layer_end -1 = the last layer).
  // A stage that starts after layer 0 takes input rows (the previous stage's hidden states)
  // instead of token ids; one that ends before the last layer returns the residual stream.
  int layer_begin = 0;
  int layer_end = -1;
  bool lm_head = true;  // false: backbone only (final hidden states out, no output matrix)
  // Called after each layer's weights are ready (checked, packed) while the model is built: the
  // layers done of `n_layers`, and their weight bytes of all the layers' (for progress displays).
  std::function<void(int layers_done, int n_layers, uint64_t bytes_done, uint64_t bytes_total)> load_progress;
  // Tensor parallelism (set by the loader for `--tp N`): this model is one rank's share of every
  // layer and sums its partial outputs with the other ranks' through the group. Null: the whole model.
  std::shared_ptr<TensorParallelGroup> tensor_parallel;
};

// Which new positions of a sequence an output is wanted for.
enum class Want : uint8_t { None, Last, All };

// One sequence's share of a forward pass: its new inputs continue the sequence at position
// kv.seq_len(seq). Exactly one of `tokens` and `embeds` is set. `embeds` holds n rows of
// n_embd floats: embedding rows (Model::embed_tokens) for a model that starts at layer 0,
// else the hidden states the previous stage returned.
struct SeqInput {
  int seq = 0;
  std::span<const int32_t> tokens;
  std::span<const float> embeds;
  Want logits = Want::Last;
  Want hidden = Want::None;
  // A LoRA adapter loaded for this model (ferrum/lora.h) that this sequence's products add, or
  // null for the base model. It must stay alive during the call.
  const LoraAdapter* lora = nullptr;
  // With `embeds`: the token ids those rows stand for, when known (a pipeline's later stage gets
  // the previous stage's rows of real tokens), so the prefix cache can key their blocks; empty:
  // positions computed from rows are never reused.
  std::span<const int32_t> cache_ids;

  int64_t size(int64_t n_embd) const {
    return tokens.empty() ? static_cast<int64_t>(embeds.size()) / n_embd
                          : static_cast<int64_t>(tokens.size());
  }
};

// Where forward() writes what the batch asked for, rows in item order: for each item one row
// (Want::Last) or one per new position (Want::All). Logit rows have n_vocab floats; hidden rows
// n_embd floats: after the final norm (before the LM head) for a model that ends at the last
// layer, the raw residual stream for a stage that ends earlier (the next stage's input).
struct ForwardOut {
  float* logits = nullptr;
  float* hidden = nullptr;
};

struct DecodeItem {
  int seq = 0;
  int32_t token = 0;
  int64_t pos = 0;                    // must equal kv.seq_len(seq)
  const LoraAdapter* lora = nullptr;  // as SeqInput::lora
};

struct ModelStats {
  int64_t forward_calls = 0, forward_tokens = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const ModelOptions& options() const = 0;  // layer_end resolved
  int layer_begin() const { return options().layer_begin; }
  int layer_end() const { return options().layer_end; }
  // Whether forward() can give logits (the stage ends at the last layer and has the LM head).
  bool has_logits() const { return options().lm_head && options().layer_end == config().n_layer; }

  // One forward pass over a mix of prefill chunks and decode tokens of different sequences
  // (each at most once), with the matrix products batched across all of them. All or nothing:
  // when the cache cannot hold the new positions a CapacityError is thrown and no sequence
  // changes. Throws for a cache made for another model shape, an out-of-range token, input rows
  // of the wrong width, or an output this model cannot give.
  virtual void forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) = 0;

  // Passes in flight: a model split over pipeline stages runs the next pass on its first stage
  // while the later stages still work on earlier ones. begin_forward() starts a pass (throwing as
  // forward() does) and returns a number for it; end_forward() waits until that pass's outputs are
  // written where its ForwardOut points (which must stay valid until then) and throws the error
  // of a pass that failed after it began. Until its pass ended, a sequence of the batch must not be
  // used or changed; other sequences of the cache may be. max_passes_in_flight() is how many
  // passes keep every stage busy (1: the default, where begin_forward() runs forward()).
  virtual int max_passes_in_flight() const { return 1; }
  virtual uint64_t begin_forward(KvCache& kv, std::span<const SeqInput> batch, ForwardOut out) {
    forward(kv, batch, out);
    return 0;
  }
  virtual void end_forward(uint64_t /*pass*/) {}

  // The embedding rows of `ids` (n_embd floats each): what forward() computes from token ids.
  // Only for a model that starts at layer 0.
  virtual void embed_tokens(std::span<const int32_t> ids, float* rows) const = 0;

  virtual size_t weight_bytes() const = 0;
  virtual ModelStats stats() const = 0;

  // The layers a cache made for this model holds: [layer_begin, layer_end), unless the model runs
  // some of its layers elsewhere (a pipeline's first stage holds only its own).
  virtual std::pair<int, int> cache_layers() const { return {layer_begin(), layer_end()}; }
  // The key/value heads per layer a cache made for this model holds: the model's, unless it holds
  // only some of them (a tensor-parallel rank holds its share).
  virtual int cache_heads() const { return config().n_head_kv; }
  // KvCache::for_model shows the model each cache it makes (a pipeline records what is done to
  // it, for the stages on other ranks).
  virtual void track_cache(KvCache&) const {}

  // Conveniences over forward():
  // Appends `tokens` to `seq` (created on first use); logits of the last token (or of every
  // token when all_logits; none when logits is null). Long prompts run in chunks of max_batch.
  // lora: the sequence's adapter (SeqInput::lora), null for the base model.
  void prefill(KvCache& kv, int seq, std::span<const int32_t> tokens, float* logits, bool all_logits = false,
               const LoraAdapter* lora = nullptr);
  // One token at position `pos`, which must equal kv.seq_len(seq).
  void decode(KvCache& kv, int seq, int32_t token, int64_t pos, float* logits);
  // Several sequences, one token each, in one pass: logits rows in item order.
  void decode_batch(KvCache& kv, std::span<const DecodeItem> items, float* logits);
  // Speculative decoding: logits for every position of `tokens` appended to `seq`.
  void forward_verify(KvCache& kv, int seq, std::span<const int32_t> tokens, float* logits);
};

}  // namespace ferrum
