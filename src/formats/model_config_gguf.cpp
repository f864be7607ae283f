#include "formats/model_config_gguf.h"

#include <cmath>
#include <filesystem>
#include <string>

#include "core/fail.h"
#include "formats/model_config_check.h"

namespace fs = std::filesystem;

namespace ferrum {
namespace {

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}  // validate_config() checked v >= 0

void write_bert(gguf::Writer& w, const ModelConfig& m) {
  w.set_u32("bert.vocab_size", u32(m.n_vocab));
  w.set_u32("bert.context_length", u32(m.n_ctx_train));
  w.set_u32("bert.embedding_length", u32(m.n_embd));
  w.set_u32("bert.block_count", u32(m.n_layer));
  w.set_u32("bert.feed_forward_length", u32(m.n_ff));
  w.set_u32("bert.attention.head_count", u32(m.n_head));
  w.set_f32("bert.attention.layer_norm_epsilon", m.norm_eps);
  w.set_bool("bert.attention.causal", false);
}

// The sliding-window layers as llama.cpp lays them out: every layer but every period-th (Gemma 2 and
// gpt-oss: period 2, the even layers; Gemma 3: 6).
std::vector<uint8_t> swa_layers_every(int n_layer, int period) {
  std::vector<uint8_t> v;
  for (int l = 0; l < n_layer; ++l) v.push_back(period == 0 || l % period < period - 1);
  return v;
}

void write_extras(gguf::Writer& w, const ModelConfig& m, const std::string& A) {
  if (m.rope_freq_scale != 1.0f) {
    w.set_string(A + ".rope.scaling.type", "linear");
    w.set_f32(A + ".rope.scaling.factor", static_cast<float>(1.0 / m.rope_freq_scale));
  }
  if (m.n_expert > 0) {
    w.set_u32(A + ".expert_count", u32(m.n_expert));
    w.set_u32(A + ".expert_used_count", u32(m.n_expert_used));
    w.set_u32(A + ".expert_feed_forward_length", u32(m.n_ff_expert));
    if (m.arch == Arch::Qwen3Moe) w.set_bool(A + ".expert_weights_norm", m.norm_topk_prob);
  }
  if (m.sliding_window > 0) w.set_u32(A + ".attention.sliding_window", u32(m.sliding_window));
  if (m.arch == Arch::GptOss && m.sliding_window > 0 && m.swa_layers != swa_layers_every(m.n_layer, 2))
    fail(
        "{}: the sliding-window layers are not the even ones, the layout llama.cpp assumes for gpt-oss "
        "files; "
        "such a model cannot be written as GGUF",
        m.name);
  if (m.is_gemma()) {
    const int period = m.arch == Arch::Gemma2 ? 2 : 6;
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
}

// The "<arch>." keys of one file. Sizes are read as ints: anything above INT32_MAX is an error
// here, the rest is checked against the other fields by validate_config().
struct GgufKeys {
  const gguf::File& f;
  std::string arch;  // the file's general.architecture, its key prefix

  std::string key(const char* k) const { return arch + "." + k; }
  int opt_int(const char* k, int64_t def) const {
    const std::optional<uint64_t> v = f.find_uint(key(k));
    if (v && *v > static_cast<uint64_t>(INT32_MAX))
      fail("{}: metadata key '{}' is {}, too large", f.path(), key(k), *v);
    return static_cast<int>(v ? static_cast<int64_t>(*v) : def);
  }
  int req_int(const char* k) const {
    f.get_uint(key(k));  // throws naming the key when it is missing or not an integer
    return opt_int(k, 0);
  }
  float opt_float(const char* k, double def) const {
    return static_cast<float>(f.find_float(key(k)).value_or(def));
  }
};

void read_sizes(const GgufKeys& g, ModelConfig& c) {
  c.n_layer = g.req_int("block_count");
  c.n_embd = g.req_int("embedding_length");
  c.n_head = g.req_int("attention.head_count");
  if (c.n_head <= 0)
    fail("{}: metadata key '{}' is {}, expected a positive value", g.f.path(), g.key("attention.head_count"),
         c.n_head);
  c.n_head_kv = g.opt_int("attention.head_count_kv", c.n_head);
  c.n_ctx_train = g.opt_int("context_length", 2048);
  c.n_ff = g.opt_int("feed_forward_length", 0);
  if (!g.f.has(g.key("attention.key_length")) && c.n_embd % c.n_head != 0)
    fail("{}: {} {} is not a multiple of {} {} (and {} is not given)", g.f.path(), g.key("embedding_length"),
         c.n_embd, g.key("attention.head_count"), c.n_head, g.key("attention.key_length"));
  c.head_dim = g.opt_int("attention.key_length", c.n_embd / c.n_head);
  c.n_rot = g.opt_int("rope.dimension_count", c.head_dim);
}

void read_rope_and_norm(const GgufKeys& g, ModelConfig& c) {
  c.rope_theta = g.opt_float("rope.freq_base", 10000.0);
  if (c.arch == Arch::Bert) {
    c.norm_eps = g.opt_float("attention.layer_norm_epsilon", 1e-12);
  } else {
    c.norm_eps = g.opt_float("attention.layer_norm_rms_epsilon", 1e-5);
  }
  const auto st = g.f.find_string(g.key("rope.scaling.type"));
  if (st && *st == "linear") {
    const double factor = g.f.find_float(g.key("rope.scaling.factor")).value_or(1.0);
    if (factor <= 0) fail("{}: rope.scaling.factor must be positive, got {}", g.f.path(), factor);
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (st && *st == "yarn") {  // llama.cpp's keys; the divisors are computed at load
    auto& y = c.yarn;
    y.factor = g.opt_float("rope.scaling.factor", 0.0);
    if (!(y.factor >= 1) || !std::isfinite(y.factor))
      fail("{}: {} must be a number >= 1 for YaRN, got {}", g.f.path(), g.key("rope.scaling.factor"),
           y.factor);
    y.orig_ctx = g.opt_int("rope.scaling.original_context_length", c.n_ctx_train);
    y.beta_fast = g.opt_float("rope.scaling.yarn_beta_fast", 32.0);
    y.beta_slow = g.opt_float("rope.scaling.yarn_beta_slow", 1.0);
    if (const auto af = g.f.find_float(g.key("rope.scaling.yarn_attn_factor")))  // times 0.1 ln(factor) + 1
      y.attn_factor = static_cast<float>(*af * (0.1 * std::log(y.factor) + 1.0));
    if (y.orig_ctx <= 0 || !(y.beta_fast > 0) || !(y.beta_slow > 0))
      fail("{}: YaRN needs a positive original context length and beta values", g.f.path());
  } else if (auto lin = g.f.find_float(g.key("rope.scale_linear"))) {
    c.rope_freq_scale = static_cast<float>(1.0 / *lin);
  }
}

// Gemma 2 and 3 as llama.cpp reads them: scaled embeddings, sandwich norms, GeGLU, a window on all
// but every 2nd (Gemma 2, 4096 unless given) or 6th layer (Gemma 3, when given), and the attention
// scale by model size (27B: 1/sqrt(n_embd / n_head), else 1/sqrt(head_dim)) unless the file gives
// attention.scale (ferrum's converter writes query_pre_attn_scalar's). Gemma 2 soft-caps scores and
// logits (50 and 30 unless given); Gemma 3 norms q and k, its windowed layers use rope.freq_base_swa
// (10000 unless given), unscaled.
void read_gemma(const GgufKeys& g, ModelConfig& c) {
  const bool g2 = c.arch == Arch::Gemma2;
  c.embed_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = true;
  c.ffn_act = ModelConfig::Activation::GeluTanh;
  c.attn_softcap = g2 ? g.opt_float("attn_logit_softcapping", 50.0) : 0.0f;
  c.final_softcap = g.opt_float("final_logit_softcapping", g2 ? 30.0 : 0.0);
  c.sliding_window = g.opt_int("attention.sliding_window", g2 ? 4096 : 0);
  if (c.sliding_window > 0)
    c.swa_layers = swa_layers_every(c.n_layer, g.opt_int("attention.sliding_window_pattern", g2 ? 2 : 6));
  if (!g2) {
    c.qk_norm = true;
    if (c.sliding_window > 0) c.rope_theta_swa = g.opt_float("rope.freq_base_swa", 10000.0);
  }
  const float by_size = c.n_layer == (g2 ? 46 : 62)
                            ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head))
                            : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  c.attn_scale = g.opt_float("attention.scale", by_size);
}

// gpt-oss as llama.cpp reads it: a window on the even layers (attention.sliding_window_pattern 2),
// the router's k largest logits softmaxed, the clamped SwiGLU (limit 7, alpha 1.702, llama.cpp's
// constants), q/k/v/o biases and attention sinks (tensors).
void read_gpt_oss(const GgufKeys& g, ModelConfig& c) {
  if (c.sliding_window > 0)
    c.swa_layers = swa_layers_every(c.n_layer, g.opt_int("attention.sliding_window_pattern", 2));
  c.moe_gating = ModelConfig::MoeGating::SoftmaxTopK;
  c.ffn_act = ModelConfig::Activation::SiLUClamped;
}

// What the family implies, and what the file's tensors say (biases, a separate output matrix).
void read_family_traits(const GgufKeys& g, ModelConfig& c) {
  c.sliding_window = g.opt_int("attention.sliding_window", 0);
  c.rope_interleaved = gguf_permutes_qk(c.arch);
  if (c.arch == Arch::SmolLM3) c.rope_layers = smollm3_rope_layers(c.n_layer);
  if (g.f.find_tensor("rope_factors_long.weight")) {  // Phi-3 LongRoPE (the factors are tensors)
    c.longrope.orig_ctx = g.req_int("rope.scaling.original_context_length");
    c.longrope.attn_factor = g.opt_float("rope.scaling.attn_factor", 1.0);
  }
  c.qk_norm = c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe;
  if (c.is_gemma()) read_gemma(g, c);  // (Gemma 3 norms q and k too)
  // Q/K/V biases: always in qwen2, in other families when the file has them (as the HF loader does).
  c.qkv_bias =
      c.arch == Arch::Qwen2 || g.f.find_tensor("blk.0.attn_q.bias") || g.f.find_tensor("blk.0.attn_qkv.bias");
  if (c.is_moe()) {
    c.n_expert = g.req_int("expert_count");
    c.n_expert_used = g.req_int("expert_used_count");
    c.n_ff_expert = g.req_int("expert_feed_forward_length");
    // HF norm_topk_prob as written by `ferrum convert`; llama.cpp's own files lack the key and
    // llama.cpp always renormalises for qwen3moe.
    c.norm_topk_prob = c.arch == Arch::Qwen3Moe && g.f.find_bool(g.key("expert_weights_norm")).value_or(true);
  }
  if (c.arch == Arch::GptOss) read_gpt_oss(g, c);
}

}  // namespace

ModelConfig config_from_gguf(const gguf::File& f) {
  const GgufKeys g{f, f.get_string("general.architecture")};
  ModelConfig c;
  c.arch = parse_arch(g.arch, f.path());
  c.name = f.find_string("general.name").value_or(fs::path(f.path()).stem().string());
  read_sizes(g, c);
  read_rope_and_norm(g, c);
  read_family_traits(g, c);
  const TensorView& emb = f.tensor("token_embd.weight");
  if (emb.ne[1] > INT32_MAX)
    fail("{}: tensor 'token_embd.weight' has shape {}: too many rows for a vocabulary", f.path(),
         emb.shape_string());
  c.n_vocab = g.opt_int("vocab_size", emb.ne[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  validate_config(c, f.path(), ConfigFields{false, g.arch + "."});
  return c;
}

std::vector<uint8_t> smollm3_rope_layers(int n_layer) {
  std::vector<uint8_t> r(static_cast<size_t>(std::max(n_layer, 0)));
  for (int l = 0; l < n_layer; ++l) r[static_cast<size_t>(l)] = (l + 1) % 4 != 0;
  return r;
}

void write_model_config(gguf::Writer& w, const ModelConfig& m) {
  if (m.arch == Arch::Bert) return write_bert(w, m);
  const std::string A = gguf_arch(m.arch);
  w.set_u32(A + ".vocab_size", u32(m.n_vocab));
  w.set_u32(A + ".context_length", u32(m.n_ctx_train));
  w.set_u32(A + ".embedding_length", u32(m.n_embd));
  w.set_u32(A + ".block_count", u32(m.n_layer));
  if (m.n_ff > 0) w.set_u32(A + ".feed_forward_length", u32(m.n_ff));
  w.set_u32(A + ".attention.head_count", u32(m.n_head));
  w.set_u32(A + ".attention.head_count_kv", u32(m.n_head_kv));
  w.set_f32(A + ".rope.freq_base", m.rope_theta);
  w.set_f32(A + ".attention.layer_norm_rms_epsilon", m.norm_eps);
  if (m.arch == Arch::SmolLM3 && m.rope_layers != smollm3_rope_layers(m.n_layer))
    fail(
        "{}: the layers without RoPE (no_rope_layers) are not every 4th layer, the pattern llama.cpp assumes "
        "for "
        "smollm3 files; such a model cannot be written as GGUF",
        m.name);
  if (gguf_permutes_qk(m.arch) || m.n_rot != m.head_dim) w.set_u32(A + ".rope.dimension_count", u32(m.n_rot));
  if (m.yarn.factor > 0) {  // llama.cpp's keys; both engines compute the divisors at load
    w.set_string(A + ".rope.scaling.type", "yarn");
    w.set_f32(A + ".rope.scaling.factor", m.yarn.factor);
    w.set_u32(A + ".rope.scaling.original_context_length", u32(m.yarn.orig_ctx));
    if (m.yarn.beta_fast != 32.0f) w.set_f32(A + ".rope.scaling.yarn_beta_fast", m.yarn.beta_fast);
    if (m.yarn.beta_slow != 1.0f) w.set_f32(A + ".rope.scaling.yarn_beta_slow", m.yarn.beta_slow);
    if (m.yarn.attn_factor > 0)
      w.set_f32(A + ".rope.scaling.yarn_attn_factor",
                static_cast<float>(m.yarn.attn_factor / (0.1 * std::log(m.yarn.factor) + 1.0)));
    // (rope_scaling.truncate false, gpt-oss's, has no key: GGUF files ramp between whole pair
    // indices, as llama.cpp computes them.)
  }
  if (!m.longrope.long_factors.empty()) {  // the factors themselves are tensors (the converter adds them)
    w.set_u32(A + ".rope.scaling.original_context_length", u32(m.longrope.orig_ctx));
    w.set_f32(A + ".rope.scaling.attn_factor", m.longrope.attn_factor);
  }
  if (A != "llama" || m.head_dim * m.n_head != m.n_embd) {
    w.set_u32(A + ".attention.key_length", u32(m.head_dim));
    w.set_u32(A + ".attention.value_length", u32(m.head_dim));
  }
  write_extras(w, m, A);
}

}  // namespace ferrum
