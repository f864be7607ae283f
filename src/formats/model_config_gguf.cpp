#include "formats/model_config_gguf.h"

#include <cmath>
#include <filesystem>
#include <string>

#include "core/fail.h"
#include "formats/family_fields.h"
#include "formats/model_config_check.h"

namespace fs = std::filesystem;

namespace ferrum {
namespace {

uint32_t u32(int v) {
  return static_cast<uint32_t>(v);
}  // validate_config() checked v >= 0

void write_extras(gguf::Writer& w, const ModelConfig& m, const std::string& A) {
  if (m.rope_freq_scale != 1.0f) {
    w.set_string(A + ".rope.scaling.type", "linear");
    w.set_f32(A + ".rope.scaling.factor", static_cast<float>(1.0 / m.rope_freq_scale));
  }
  if (m.n_expert > 0) {
    w.set_u32(A + ".expert_count", u32(m.n_expert));
    w.set_u32(A + ".expert_used_count", u32(m.n_expert_used));
    w.set_u32(A + ".expert_feed_forward_length", u32(m.n_ff_expert));
  }
  if (m.sliding_window > 0) w.set_u32(A + ".attention.sliding_window", u32(m.sliding_window));
}

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

void read_rope_and_norm(const GgufKeys& g, const Family& fam, ModelConfig& c) {
  c.rope_theta = g.opt_float("rope.freq_base", 10000.0);
  if (fam.encoder) {
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

// What the file's tensors and shared keys say (a window, biases, LongRoPE, experts), then what the
// family reads of its own.
void read_family_traits(const GgufKeys& g, const Family& fam, ModelConfig& c) {
  c.sliding_window = g.opt_int("attention.sliding_window", 0);
  c.rope_interleaved = fam.gguf_qk_permuted;
  if (g.f.find_tensor("rope_factors_long.weight")) {  // Phi-3 LongRoPE (the factors are tensors)
    c.longrope.orig_ctx = g.req_int("rope.scaling.original_context_length");
    c.longrope.attn_factor = g.opt_float("rope.scaling.attn_factor", 1.0);
  }
  // Q/K/V biases when the file has them (as the HF loader does; qwen2 always).
  c.qkv_bias = g.f.find_tensor("blk.0.attn_q.bias") || g.f.find_tensor("blk.0.attn_qkv.bias");
  if (fam.moe) {
    c.n_expert = g.req_int("expert_count");
    c.n_expert_used = g.req_int("expert_used_count");
    c.n_ff_expert = g.req_int("expert_feed_forward_length");
  }
  if (fam.read_gguf) fam.read_gguf(g, c);
}

}  // namespace

ModelConfig config_from_gguf(const gguf::File& f) {
  const GgufKeys g{f, f.get_string("general.architecture")};
  ModelConfig c;
  c.arch = parse_arch(g.arch, f.path());
  const Family& fam = family_of(c.arch);
  c.name = f.find_string("general.name").value_or(fs::path(f.path()).stem().string());
  read_sizes(g, c);
  read_rope_and_norm(g, fam, c);
  read_family_traits(g, fam, c);
  const TensorView& emb = f.tensor("token_embd.weight");
  if (emb.ne[1] > INT32_MAX)
    fail("{}: tensor 'token_embd.weight' has shape {}: too many rows for a vocabulary", f.path(),
         emb.shape_string());
  c.n_vocab = g.opt_int("vocab_size", emb.ne[1]);
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  validate_config(c, f.path(), ConfigFields{false, g.arch + "."});
  return c;
}

void write_model_config(gguf::Writer& w, const ModelConfig& m) {
  const Family& fam = family_of(m.arch);
  const std::string A = fam.gguf;
  if (fam.encoder) return fam.write_gguf(w, m, A);  // an encoder's keys are all its own
  w.set_u32(A + ".vocab_size", u32(m.n_vocab));
  w.set_u32(A + ".context_length", u32(m.n_ctx_train));
  w.set_u32(A + ".embedding_length", u32(m.n_embd));
  w.set_u32(A + ".block_count", u32(m.n_layer));
  if (m.n_ff > 0) w.set_u32(A + ".feed_forward_length", u32(m.n_ff));
  w.set_u32(A + ".attention.head_count", u32(m.n_head));
  w.set_u32(A + ".attention.head_count_kv", u32(m.n_head_kv));
  w.set_f32(A + ".rope.freq_base", m.rope_theta);
  w.set_f32(A + ".attention.layer_norm_rms_epsilon", m.norm_eps);
  if (fam.gguf_qk_permuted || m.n_rot != m.head_dim) w.set_u32(A + ".rope.dimension_count", u32(m.n_rot));
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
  if (fam.write_gguf) fam.write_gguf(w, m, A);
}

}  // namespace ferrum
