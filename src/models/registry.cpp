#include "models/registry.h"

#include <algorithm>

#include "core/fail.h"
#include "formats/family.h"
#include "formats/model_config_check.h"
#include "kernels/cpu/matmul.h"
#include "models/bert_model.h"
#include "models/llama_model.h"

namespace ferrum {

std::unique_ptr<Model> create_model(ModelConfig cfg, WeightSet weights, const ModelOptions& opts) {
  validate_config(cfg, weights.source(), ConfigFields{false, std::string(arch_name(cfg.arch)) + "."});
  // A stage's first layer (an impossible range is the model's to name).
  const int first = opts.layer_begin > 0 && opts.layer_begin < cfg.n_layer ? opts.layer_begin : 0;
  const Family& family = family_of(cfg.arch);
  if (family.encoder) return std::make_unique<BertModel>(std::move(cfg), std::move(weights), opts);
  check_decoder_weights(cfg, weights, first);
  if (family.moe) {
    // Attention is the dense decoder's; make_feed_forward gives every layer a MoeFeedForward.
    if (cfg.n_expert <= 0 || cfg.n_ff_expert <= 0)
      fail("{}: a {} model needs a positive expert count ({}) and expert feed-forward length ({})",
           weights.source(), family.name, cfg.n_expert, cfg.n_ff_expert);
    if (cfg.n_expert_used <= 0 || cfg.n_expert_used > cfg.n_expert)
      fail("{}: experts used per token ({}) must be between 1 and the expert count ({})", weights.source(),
           cfg.n_expert_used, cfg.n_expert);
  } else if (cfg.n_ff <= 0) {
    fail("{}: feed_forward_length is missing", weights.source());
  }
  return std::make_unique<LlamaModel>(std::move(cfg), std::move(weights), opts);
}

std::string kernel_tier() {
  return kernels::active_isa();
}

}  // namespace ferrum
