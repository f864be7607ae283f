// Checks that the weights agree with a decoder config before anything is sized from it (the
// config itself is checked by validate_config, formats/model_config_check.h).
#include "core/fail.h"
#include "models/registry.h"

namespace ferrum {

void check_decoder_weights(const ModelConfig& c, const WeightSet& w, int first) {
  const int64_t d = c.n_embd;
  w.get("token_embd.weight", {d, c.n_vocab});
  // The first layer's attention fixes the head layout, the last layer's presence the depth:
  // both are checked before per-layer state (the KV cache) is sized from the config.
  const std::string b = fmt::format("blk.{}.", first);
  if (w.find(b + "attn_qkv.weight")) {
    w.get(b + "attn_qkv.weight", {d, static_cast<int64_t>(c.q_dim()) + 2 * c.kv_dim()});
  } else {
    w.get(b + "attn_q.weight", {d, c.q_dim()});
    w.get(b + "attn_k.weight", {d, c.kv_dim()});
  }
  w.get(b + "attn_output.weight", {c.q_dim(), d});
  w.get(fmt::format("blk.{}.attn_norm.weight", c.n_layer - 1));
}

}  // namespace ferrum
