// Gemma 2 and 3 (transformers' Gemma2Config, Gemma3TextConfig): embeddings times sqrt(hidden_size),
// sandwich norms, GeGLU (gelu_pytorch_tanh), scores scaled by query_pre_attn_scalar^-1/2, a sliding
// window on some layers. Gemma 2 soft-caps scores and logits; Gemma 3 norms q and k per head and gives
// its windowed layers their own RoPE base (unscaled). Embeddings are tied unless the config says not.
#include <cmath>

#include "core/fail.h"
#include "formats/family.h"
#include "formats/family_fields.h"
#include "formats/gguf_writer.h"

namespace ferrum {
namespace {

// The windowed layers llama.cpp assumes: all but every period-th.
int gguf_swa_period(Arch a) {
  return a == Arch::Gemma2 ? 2 : 6;
}

void read_hf_shared(const hf::Config& c, ModelConfig& m) {
  m.embed_scale = std::sqrt(static_cast<float>(m.n_embd));
  m.post_norms = true;
  const std::string act = c.find_string("hidden_activation").value_or("gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    fail("{}: hidden_activation '{}' is not supported (gelu_pytorch_tanh)", c.path(), act);
  m.ffn_act = ModelConfig::Activation::GeluTanh;
  const double qpa = c.find_float("query_pre_attn_scalar").value_or(m.head_dim);
  if (!(qpa > 0)) fail("{}: query_pre_attn_scalar must be positive, got {}", c.path(), qpa);
  m.attn_scale = static_cast<float>(1.0 / std::sqrt(qpa));
  m.attn_softcap = static_cast<float>(c.find_float("attn_logit_softcapping").value_or(0.0));
  m.final_softcap = static_cast<float>(c.find_float("final_logit_softcapping").value_or(0.0));
  m.sliding_window = hf::hf_int_or(c, "sliding_window", 4096);
}

// The window on the layers layer_types names, else Gemma 2's even layers.
void read_hf_gemma2(const hf::Config& c, ModelConfig& m) {
  read_hf_shared(c, m);
  if (!hf::read_layer_types(c, m))
    for (int l = 0; l < m.n_layer; ++l) m.swa_layers.push_back(l % 2 == 0);
}

// The window on the layers layer_types names, else all but every sliding_window_pattern-th (6);
// rope_local_base_freq for those layers.
void read_hf_gemma3(const hf::Config& c, ModelConfig& m) {
  read_hf_shared(c, m);
  if (!hf::read_layer_types(c, m)) {
    const int64_t period = c.find_int("sliding_window_pattern").value_or(6);
    if (period < 1) fail("{}: sliding_window_pattern must be at least 1, got {}", c.path(), period);
    for (int l = 0; l < m.n_layer; ++l) m.swa_layers.push_back((l + 1) % period != 0);
  }
  m.qk_norm = true;
  m.rope_theta_swa = static_cast<float>(c.find_float("rope_local_base_freq").value_or(10000.0));
}

// As llama.cpp reads them: a window on all but every 2nd (Gemma 2, 4096 unless given) or 6th layer
// (Gemma 3, when given), and the attention scale by model size (27B: 1/sqrt(n_embd / n_head), else
// 1/sqrt(head_dim)) unless the file gives attention.scale (ferrum's converter writes
// query_pre_attn_scalar's). Gemma 2 soft-caps scores and logits (50 and 30 unless given); Gemma 3's
// windowed layers use rope.freq_base_swa (10000 unless given).
void read_gguf_gemma(const GgufKeys& g, ModelConfig& c) {
  const bool g2 = c.arch == Arch::Gemma2;
  c.embed_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = true;
  c.ffn_act = ModelConfig::Activation::GeluTanh;
  c.attn_softcap = g2 ? g.opt_float("attn_logit_softcapping", 50.0) : 0.0f;
  c.final_softcap = g.opt_float("final_logit_softcapping", g2 ? 30.0 : 0.0);
  c.sliding_window = g.opt_int("attention.sliding_window", g2 ? 4096 : 0);
  if (c.sliding_window > 0)
    c.swa_layers =
        swa_layers_every(c.n_layer, g.opt_int("attention.sliding_window_pattern", gguf_swa_period(c.arch)));
  if (!g2) {
    c.qk_norm = true;
    if (c.sliding_window > 0) c.rope_theta_swa = g.opt_float("rope.freq_base_swa", 10000.0);
  }
  const float by_size = c.n_layer == (g2 ? 46 : 62)
                            ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head))
                            : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  c.attn_scale = g.opt_float("attention.scale", by_size);
}

void write_gguf_gemma(gguf::Writer& w, const ModelConfig& m, const std::string& A) {
  const int period = gguf_swa_period(m.arch);
  if (m.sliding_window > 0 && m.swa_layers != swa_layers_every(m.n_layer, period))
    fail(
        "{}: the sliding-window layers are not all but every {}th, the layout llama.cpp assumes for {} "
        "files; "
        "such a model cannot be written as GGUF",
        m.name, period, A);
  if (m.arch == Arch::Gemma2) w.set_f32(A + ".attn_logit_softcapping", m.attn_softcap);
  if (m.final_softcap > 0 || m.arch == Arch::Gemma2)
    w.set_f32(A + ".final_logit_softcapping", m.final_softcap);
  if (m.rope_theta_swa > 0) w.set_f32(A + ".rope.freq_base_swa", m.rope_theta_swa);
  if (m.attn_scale > 0) w.set_f32(A + ".attention.scale", m.attn_scale);
}

}  // namespace

extern const Family kGemma2, kGemma3;

const Family kGemma2{.arch = Arch::Gemma2,
                     .name = "gemma2",
                     .gguf = "gemma2",
                     .hf_type = "gemma2",
                     .hf_class = "Gemma2For",
                     .hf_n_ctx = 8192,
                     .gguf_qk_permuted = false,
                     .hf_tied_embeddings = true,
                     .hf_norm_plus_one = true,
                     .read_hf = read_hf_gemma2,
                     .read_gguf = read_gguf_gemma,
                     .write_gguf = write_gguf_gemma};

const Family kGemma3{.arch = Arch::Gemma3,
                     .name = "gemma3",
                     .gguf = "gemma3",
                     .hf_type = "gemma3_text",
                     .hf_class = "Gemma3For",
                     .hf_n_ctx = 131072,
                     .gguf_qk_permuted = false,
                     .hf_rope_theta = 1e6,
                     .hf_tied_embeddings = true,
                     .hf_norm_plus_one = true,
                     .read_hf = read_hf_gemma3,
                     .read_gguf = read_gguf_gemma,
                     .write_gguf = write_gguf_gemma};

}  // namespace ferrum
