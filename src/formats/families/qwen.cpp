// Qwen2 (Q/K/V biases), Qwen3 (RMS norms on q and k per head) and Qwen3-MoE (Qwen3's attention,
// every FFN a mixture of experts: a softmax over all router logits, the k largest, renormalised when
// norm_topk_prob). Their HF class prefixes end in "For" so that Qwen2Moe / Qwen2VL do not match.
#include "core/fail.h"
#include "formats/family.h"
#include "formats/family_fields.h"
#include "formats/gguf_writer.h"

namespace ferrum {
namespace {

void qkv_bias(const hf::Config&, ModelConfig& m) {
  m.qkv_bias = true;
}
void qkv_bias_gguf(const GgufKeys&, ModelConfig& m) {
  m.qkv_bias = true;  // always in qwen2 files; other families when the file has the tensors
}

void qk_norm(const hf::Config&, ModelConfig& m) {
  m.qk_norm = true;
}
void qk_norm_gguf(const GgufKeys&, ModelConfig& m) {
  m.qk_norm = true;
}

void read_hf_qwen3moe(const hf::Config& c, ModelConfig& m) {
  m.qk_norm = true;
  m.n_expert = hf::hf_int(c, "num_experts");
  m.n_expert_used = hf::hf_int(c, "num_experts_per_tok");
  m.n_ff_expert = hf::hf_int(c, "moe_intermediate_size");
  m.norm_topk_prob = c.find_bool("norm_topk_prob").value_or(false);
  // Every layer must be sparse: dense MLP layers inside a MoE model are not supported.
  if (c.find_int("decoder_sparse_step").value_or(1) != 1)
    fail("{}: decoder_sparse_step other than 1 is not supported", c.path());
  const auto it = c.json().find("mlp_only_layers");
  if (it != c.json().end() && !it->is_null() && !(it->is_array() && it->empty()))
    fail("{}: mlp_only_layers (dense layers in a MoE model) is not supported", c.path());
}

// HF norm_topk_prob as written by `ferrum convert`; llama.cpp's own files lack the key and llama.cpp
// always renormalises for qwen3moe.
void read_gguf_qwen3moe(const GgufKeys& g, ModelConfig& m) {
  m.qk_norm = true;
  m.norm_topk_prob = g.f.find_bool(g.key("expert_weights_norm")).value_or(true);
}

void write_gguf_qwen3moe(gguf::Writer& w, const ModelConfig& m, const std::string& prefix) {
  w.set_bool(prefix + ".expert_weights_norm", m.norm_topk_prob);
}

}  // namespace

extern const Family kQwen2, kQwen3, kQwen3Moe;

const Family kQwen2{.arch = Arch::Qwen2,
                    .name = "qwen2",
                    .gguf = "qwen2",
                    .hf_type = "qwen2",
                    .hf_class = "Qwen2For",
                    .hf_n_ctx = 32768,
                    .gguf_qk_permuted = false,
                    .read_hf = qkv_bias,
                    .read_gguf = qkv_bias_gguf};

const Family kQwen3{.arch = Arch::Qwen3,
                    .name = "qwen3",
                    .gguf = "qwen3",
                    .hf_type = "qwen3",
                    .hf_class = "Qwen3For",
                    .hf_n_ctx = 32768,
                    .gguf_qk_permuted = false,
                    .read_hf = qk_norm,
                    .read_gguf = qk_norm_gguf};

const Family kQwen3Moe{.arch = Arch::Qwen3Moe,
                       .name = "qwen3moe",
                       .gguf = "qwen3moe",
                       .hf_type = "qwen3_moe",
                       .hf_class = "Qwen3MoeFor",
                       .hf_n_ctx = 32768,
                       .gguf_qk_permuted = false,
                       .moe = true,
                       .read_hf = read_hf_qwen3moe,
                       .read_gguf = read_gguf_qwen3moe,
                       .write_gguf = write_gguf_qwen3moe};

}  // namespace ferrum
