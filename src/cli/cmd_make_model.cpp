// `ferrum make-model` (hidden, for benchmarks): writes a GGUF with random weights and a valid
// synthetic SentencePiece vocabulary for a given Llama/Qwen2/Gemma 3/Phi-4/Qwen3-MoE/gpt-oss shape,
// so realistic-size models can be benchmarked (and fed to llama.cpp) without downloading any.
// gpt-oss's experts are written in MXFP4, as its checkpoints ship them.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/fail.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "formats/family.h"
#include "formats/gguf_writer.h"

namespace ferrum::cli {
namespace {

struct Shape {
  Arch arch = Arch::Llama;  // Llama, Qwen2, Gemma3, Phi3, Qwen3Moe or GptOss
  int n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_vocab = 0, n_ctx = 0;
  int head_dim = 0;  // 0: n_embd / n_head
  int n_rot = 0;     // 0: head_dim
  float rope_theta = 10000.0f, norm_eps = 1e-5f;
  bool tied = true, qkv_bias = false, llama3_rope = false;
  int sliding_window = 0;  // Gemma 3: on 5 of every 6 layers
  int orig_ctx = 0;        // Phi: LongRoPE's original context (factors written as tensors)
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // MoE (n_ff: the expert width too)
  float yarn_factor = 0;                              // gpt-oss: YaRN over orig_ctx positions
  int hd() const { return head_dim ? head_dim : n_embd / n_head; }
  int rot() const { return n_rot ? n_rot : hd(); }
};

const char* const kShapes[] = {"llama-1b",      "qwen-0.5b",   "gemma3-1b", "phi4-mini",
                               "qwen3-30b-a3b", "gpt-oss-20b", "tiny"};

// Published shapes (config.json of meta-llama/Llama-3.2-1B, Qwen/Qwen2.5-0.5B, google/gemma-3-1b-it,
// microsoft/Phi-4-mini-instruct, Qwen/Qwen3-30B-A3B and openai/gpt-oss-20b).
Shape preset_shape(const std::string& name) {
  Shape s;
  if (name == "gpt-oss-20b") {
    s.arch = Arch::GptOss;
    s.n_layer = 24, s.n_embd = 2880, s.n_head = 64, s.n_head_kv = 8, s.head_dim = 64, s.n_ff = 2880;
    s.n_expert = 32, s.n_expert_used = 4, s.n_ff_exp = 2880, s.n_vocab = 201088, s.n_ctx = 131072;
    s.rope_theta = 150000.0f, s.sliding_window = 128, s.orig_ctx = 4096, s.yarn_factor = 32, s.tied = false;
  } else if (name == "qwen3-30b-a3b") {
    s.arch = Arch::Qwen3Moe;
    s.n_layer = 48, s.n_embd = 2048, s.n_head = 32, s.n_head_kv = 4, s.head_dim = 128, s.n_ff = 6144;
    s.n_expert = 128, s.n_expert_used = 8, s.n_ff_exp = 768, s.n_vocab = 151936, s.n_ctx = 40960;
    s.rope_theta = 1000000.0f, s.norm_eps = 1e-6f, s.tied = false;
  } else if (name == "gemma3-1b") {
    s.arch = Arch::Gemma3;
    s.n_layer = 26, s.n_embd = 1152, s.n_head = 4, s.n_head_kv = 1, s.head_dim = 256, s.n_ff = 6912;
    s.n_vocab = 262144, s.n_ctx = 32768, s.rope_theta = 1000000.0f, s.norm_eps = 1e-6f,
    s.sliding_window = 512;
  } else if (name == "phi4-mini") {
    s.arch = Arch::Phi3;
    s.n_layer = 32, s.n_embd = 3072, s.n_head = 24, s.n_head_kv = 8, s.n_ff = 8192, s.n_vocab = 200064;
    s.n_ctx = 131072, s.orig_ctx = 4096, s.n_rot = 96;  // partial_rotary_factor 0.75 of 128
  } else if (name == "llama-1b") {
    s.n_layer = 16, s.n_embd = 2048, s.n_head = 32, s.n_head_kv = 8, s.n_ff = 8192, s.n_vocab = 128256;
    s.n_ctx = 131072, s.rope_theta = 500000.0f, s.llama3_rope = true;
  } else if (name == "qwen-0.5b") {
    s.arch = Arch::Qwen2;
    s.n_layer = 24, s.n_embd = 896, s.n_head = 14, s.n_head_kv = 2, s.n_ff = 4864, s.n_vocab = 151936;
    s.n_ctx = 32768, s.rope_theta = 1000000.0f, s.norm_eps = 1e-6f, s.qkv_bias = true;
  } else if (name == "tiny") {  // for tests
    s.n_layer = 2, s.n_embd = 64, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 128, s.n_vocab = 512, s.n_ctx = 256;
  } else {
    fail(
        "--shape: '{}' is not known (use llama-1b, qwen-0.5b, gemma3-1b, phi4-mini, qwen3-30b-a3b, "
        "gpt-oss-20b or "
        "tiny)",
        name);
  }
  return s;
}

// splitmix64: a fast, seedable generator; one stream per tensor row keeps the output
// independent of the thread count.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-a, a).
  float uniform(float a) {
    return (static_cast<float>(next() >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * a;
  }
};

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// SentencePiece token types (llama.cpp llama_token_type).
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeByte = 6;

// <unk> <s> </s>, the 256 byte-fallback tokens, then every lower-case letter string in order of
// length, each with and without the U+2581 word-start marker. All prefixes of a piece are pieces
// too, so SentencePiece merging reaches every one of them.
void synth_vocab(int n, std::vector<std::string>& tokens, std::vector<float>& scores,
                 std::vector<int32_t>& types) {
  if (n < 259 + 52) fail("--vocab: {} is too small for a synthetic vocabulary (at least 311)", n);
  tokens = {"<unk>", "<s>", "</s>"};
  types = {kTypeUnknown, kTypeControl, kTypeControl};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(kTypeByte);
  }
  std::vector<std::string> level = {""};
  while (static_cast<int>(tokens.size()) < n) {
    std::vector<std::string> next;
    for (const std::string& p : level)
      for (char c = 'a'; c <= 'z'; ++c) next.push_back(p + c);
    for (const std::string& p : next) {
      for (const std::string& t : {"\xe2\x96\x81" + p, p}) {
        if (static_cast<int>(tokens.size()) == n) break;
        tokens.push_back(t);
        types.push_back(kTypeNormal);
      }
    }
    level = std::move(next);
  }
  scores.assign(n, 0.0f);
  for (int i = 259; i < n; ++i) scores[i] = -static_cast<float>(i - 259);  // shorter pieces merge first
}

// Llama-3 RoPE frequency factors (Llama-3.1/3.2 config: factor 32, low 1, high 4, original
// context 8192), stored in rope_freqs.weight as llama.cpp's converter does.
std::vector<float> llama3_freq_factors(int head_dim, float theta) {
  const double factor = 32, low = 1, high = 4, orig = 8192;
  const double low_wl = orig / low, high_wl = orig / high;
  std::vector<float> f(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = std::pow(theta, -2.0 * i / head_dim), wl = 2 * std::numbers::pi / freq;
    if (wl < high_wl) {
      f[i] = 1.0f;
    } else if (wl > low_wl) {
      f[i] = static_cast<float>(factor);
    } else {
      const double smooth = (orig / wl - low) / (high - low);
      f[i] = static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return f;
}

// One row of `cols` uniform values in [-a, a) stored as `type` (F32, F16 or a quantized type).
void random_row(Rng& rng, float a, int64_t cols, DType type, uint8_t* dst) {
  if (type == DType::F32) {
    for (int64_t c = 0; c < cols; ++c) reinterpret_cast<float*>(dst)[c] = rng.uniform(a);
    return;
  }
  if (type == DType::F16) {
    for (int64_t c = 0; c < cols; ++c) reinterpret_cast<uint16_t*>(dst)[c] = f32_to_f16(rng.uniform(a));
    return;
  }
  thread_local std::vector<float> row;
  row.resize(cols);
  for (int64_t c = 0; c < cols; ++c) row[c] = rng.uniform(a);
  quantize_row(type, row.data(), dst, cols);
}

class ModelWriter {
 public:
  ModelWriter(DType type, uint64_t seed, int threads) : type_(type), seed_(seed), pool_(threads) {}

  // A matrix of `rows` rows of `cols` values, uniform with standard deviation `sd`.
  void matrix(const std::string& name, int64_t cols, int64_t rows, float sd) {
    const size_t rs = row_size(type_, cols);
    auto& buf = bufs_.emplace_back(rs * rows);
    const float a = sd * std::sqrt(3.0f);
    const uint64_t h = hash_name(name) ^ seed_;
    pool_.parallel_for(rows, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; ++r) {
        Rng rng{h + static_cast<uint64_t>(r) * 0x632be59bd9b4e019ull};
        uint8_t* dst = buf.data() + r * rs;
        random_row(rng, a, cols, type_, dst);
      }
    });
    w.add_tensor(name, type_, {cols, rows}, buf.data(), buf.size());
  }

  // A stack of n_expert matrices of `rows` x `cols` ({cols, rows, n_expert}) in `type`.
  void experts(const std::string& name, int64_t cols, int64_t rows, int64_t n_expert, float sd, DType type) {
    const size_t rs = row_size(type, cols);
    auto& buf = bufs_.emplace_back(rs * rows * n_expert);
    const float a = sd * std::sqrt(3.0f);
    const uint64_t h = hash_name(name) ^ seed_;
    pool_.parallel_for(rows * n_expert, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; ++r) {
        Rng rng{h + static_cast<uint64_t>(r) * 0x632be59bd9b4e019ull};
        random_row(rng, a, cols, type, buf.data() + r * rs);
      }
    });
    w.add_tensor(name, type, {cols, rows, n_expert}, buf.data(), buf.size());
  }

  // An F32 vector: `base` plus uniform noise of standard deviation `sd`.
  void vector(const std::string& name, int64_t n, float base, float sd) {
    auto& buf = bufs_.emplace_back(n * sizeof(float));
    Rng rng{hash_name(name) ^ seed_};
    float* v = reinterpret_cast<float*>(buf.data());
    for (int64_t i = 0; i < n; ++i) v[i] = base + rng.uniform(sd * std::sqrt(3.0f));
    w.add_tensor(name, DType::F32, {n}, buf.data(), buf.size());
  }

  // An F32 matrix ({cols, rows}): biases per expert, the router.
  void f32_matrix(const std::string& name, int64_t cols, int64_t rows, float sd) {
    auto& buf = bufs_.emplace_back(cols * rows * sizeof(float));
    Rng rng{hash_name(name) ^ seed_};
    float* v = reinterpret_cast<float*>(buf.data());
    for (int64_t i = 0; i < cols * rows; ++i) v[i] = rng.uniform(sd * std::sqrt(3.0f));
    w.add_tensor(name, DType::F32, {cols, rows}, buf.data(), buf.size());
  }

  void values(const std::string& name, std::vector<float> v) {
    auto& buf = bufs_.emplace_back(v.size() * sizeof(float));
    std::memcpy(buf.data(), v.data(), buf.size());
    w.add_tensor(name, DType::F32, {static_cast<int64_t>(v.size())}, buf.data(), buf.size());
  }

  gguf::Writer w;

 private:
  DType type_;
  uint64_t seed_;
  ThreadPool pool_;
  std::vector<std::vector<uint8_t>> bufs_;
};

// The family's keys beyond the common ones (as llama.cpp's converters write them).
void family_keys(gguf::Writer& w, const Shape& s, const std::string& a) {
  if (s.arch == Arch::Gemma3) {
    w.set_u32(a + ".attention.key_length", s.hd());
    w.set_u32(a + ".attention.value_length", s.hd());
    w.set_u32(a + ".attention.sliding_window", s.sliding_window);
    w.set_f32(a + ".rope.freq_base_swa", 10000.0f);
  }
  if (s.n_expert > 0) {
    w.set_u32(a + ".expert_count", s.n_expert);
    w.set_u32(a + ".expert_used_count", s.n_expert_used);
    w.set_u32(a + ".expert_feed_forward_length", s.n_ff_exp);
    w.set_u32(a + ".attention.key_length", s.hd());
    w.set_u32(a + ".attention.value_length", s.hd());
  }
  if (s.arch == Arch::GptOss) {  // YaRN and the window on the even layers (llama.cpp's default pattern)
    w.set_u32(a + ".attention.sliding_window", s.sliding_window);
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", s.yarn_factor);
    w.set_u32(a + ".rope.scaling.original_context_length", s.orig_ctx);
    return;
  }
  if (s.orig_ctx) {
    const double scale = static_cast<double>(s.n_ctx) / s.orig_ctx;
    w.set_u32(a + ".rope.scaling.original_context_length", s.orig_ctx);
    w.set_f32(a + ".rope.scaling.attn_factor",
              static_cast<float>(std::sqrt(1 + std::log(scale) / std::log(s.orig_ctx))));
    w.set_u32(a + ".attention.sliding_window", 0);
  }
}

// A MoE layer (Qwen3-MoE, gpt-oss): attention as the dense families', then the router and the
// expert stacks (gpt-oss: MXFP4, with biases and attention sinks).
void moe_layer_tensors(ModelWriter& m, const Shape& s, int l, DType type) {
  const int hd = s.hd(), qd = hd * s.n_head, kvd = hd * s.n_head_kv, E = s.n_expert, ff = s.n_ff_exp;
  const bool oss = s.arch == Arch::GptOss;
  const float sd = 0.02f, sd_out = 0.5f / std::sqrt(static_cast<float>(ff));
  const std::string p = fmt::format("blk.{}.", l);
  m.vector(p + "attn_norm.weight", s.n_embd, 1.0f, 0.05f);
  m.matrix(p + "attn_q.weight", s.n_embd, qd, sd);
  m.matrix(p + "attn_k.weight", s.n_embd, kvd, sd);
  m.matrix(p + "attn_v.weight", s.n_embd, kvd, sd);
  m.matrix(p + "attn_output.weight", qd, s.n_embd, sd);
  if (oss) {
    for (const auto& [n, w] : {std::pair{"attn_q.bias", qd},
                               {"attn_k.bias", kvd},
                               {"attn_v.bias", kvd},
                               {"attn_output.bias", s.n_embd}})
      m.vector(p + n, w, 0.0f, 0.1f);
    m.vector(p + "attn_sinks.weight", s.n_head, 1.0f, 1.0f);
  } else {
    m.vector(p + "attn_q_norm.weight", hd, 1.0f, 0.05f);
    m.vector(p + "attn_k_norm.weight", hd, 1.0f, 0.05f);
  }
  m.vector(p + (oss ? "post_attention_norm.weight" : "ffn_norm.weight"), s.n_embd, 1.0f, 0.05f);
  m.f32_matrix(p + "ffn_gate_inp.weight", s.n_embd, E, 0.1f);
  const DType et = oss ? DType::MXFP4 : type;
  m.experts(p + "ffn_gate_exps.weight", s.n_embd, ff, E, sd, et);
  m.experts(p + "ffn_up_exps.weight", s.n_embd, ff, E, sd, et);
  m.experts(p + "ffn_down_exps.weight", ff, s.n_embd, E, sd_out, et);
  if (oss) {
    m.vector(p + "ffn_gate_inp.bias", E, 0.0f, 0.5f);
    m.f32_matrix(p + "ffn_gate_exps.bias", ff, E, 0.1f);
    m.f32_matrix(p + "ffn_up_exps.bias", ff, E, 0.1f);
    m.f32_matrix(p + "ffn_down_exps.bias", s.n_embd, E, 0.1f);
  }
}

// One layer's tensors. Standard deviations keep activations in a realistic range through random layers.
void layer_tensors(ModelWriter& m, const Shape& s, int l) {
  const int hd = s.hd(), qd = hd * s.n_head, kvd = hd * s.n_head_kv;
  const float sd = 0.02f, sd_out = 0.5f / std::sqrt(static_cast<float>(s.n_ff));
  const std::string p = fmt::format("blk.{}.", l);
  m.vector(p + "attn_norm.weight", s.n_embd, 1.0f, 0.05f);
  if (s.arch == Arch::Phi3) {  // fused projections, as llama.cpp's phi3 has them
    m.matrix(p + "attn_qkv.weight", s.n_embd, qd + 2 * kvd, sd);
  } else {
    m.matrix(p + "attn_q.weight", s.n_embd, qd, sd);
    m.matrix(p + "attn_k.weight", s.n_embd, kvd, sd);
    m.matrix(p + "attn_v.weight", s.n_embd, kvd, sd);
  }
  if (s.qkv_bias) {
    m.vector(p + "attn_q.bias", qd, 0.0f, 0.1f);
    m.vector(p + "attn_k.bias", kvd, 0.0f, 0.1f);
    m.vector(p + "attn_v.bias", kvd, 0.0f, 0.1f);
  }
  if (s.arch == Arch::Gemma3) {
    m.vector(p + "attn_q_norm.weight", hd, 1.0f, 0.05f);
    m.vector(p + "attn_k_norm.weight", hd, 1.0f, 0.05f);
  }
  m.matrix(p + "attn_output.weight", qd, s.n_embd, sd);
  if (s.arch == Arch::Gemma3) m.vector(p + "post_attention_norm.weight", s.n_embd, 1.0f, 0.05f);
  m.vector(p + "ffn_norm.weight", s.n_embd, 1.0f, 0.05f);
  if (s.arch == Arch::Phi3) {
    m.matrix(p + "ffn_up.weight", s.n_embd, 2 * s.n_ff, sd);  // gate | up
  } else {
    m.matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff, sd);
    m.matrix(p + "ffn_up.weight", s.n_embd, s.n_ff, sd);
  }
  m.matrix(p + "ffn_down.weight", s.n_ff, s.n_embd, sd_out);
  if (s.arch == Arch::Gemma3) m.vector(p + "post_ffw_norm.weight", s.n_embd, 1.0f, 0.05f);
}

void write_model(const Shape& s, DType type, uint64_t seed, int threads, const std::string& out) {
  if (s.n_head <= 0 || (!s.head_dim && s.n_embd % s.n_head != 0))
    fail("hidden size {} is not a multiple of {} heads", s.n_embd, s.n_head);
  if (s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0)
    fail("{} heads are not a multiple of {} KV heads", s.n_head, s.n_head_kv);
  ModelWriter m(type, seed, threads);
  gguf::Writer& w = m.w;
  const std::string a = gguf_arch(s.arch);
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", fmt::format("ferrum-random-{}-{}L-{}", a, s.n_layer, s.n_embd));
  // llama_ftype: all F32, mostly F16, mostly Q8_0, mostly MXFP4 (the MoE preset).
  w.set_u32("general.file_type", s.arch == Arch::GptOss ? 38
                                 : type == DType::F16   ? 1
                                 : type == DType::Q8_0  ? 7
                                                        : 0);
  w.set_u32(a + ".vocab_size", s.n_vocab);
  w.set_u32(a + ".context_length", s.n_ctx);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".block_count", s.n_layer);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_head);
  w.set_u32(a + ".attention.head_count_kv", s.n_head_kv);
  w.set_u32(a + ".rope.dimension_count", s.rot());
  w.set_f32(a + ".rope.freq_base", s.rope_theta);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.norm_eps);
  family_keys(w, s, a);

  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  synth_vocab(s.n_vocab, tokens, scores, types);
  if (s.arch == Arch::Phi3) {  // llama.cpp looks this token up in phi3 files
    tokens.back() = "<|endoftext|>";
    types.back() = kTypeControl;
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);

  m.matrix("token_embd.weight", s.n_embd, s.n_vocab, 0.02f);
  if (s.llama3_rope) m.values("rope_freqs.weight", llama3_freq_factors(s.hd(), s.rope_theta));
  if (s.orig_ctx &&
      s.arch == Arch::Phi3) {  // LongRoPE divisors: about 1 within the original context, growing beyond
    std::vector<float> lng(s.rot() / 2), shrt(s.rot() / 2);
    for (int i = 0; i < s.rot() / 2; ++i) {
      shrt[i] = 1.0f + 0.05f * static_cast<float>(i) / static_cast<float>(s.rot() / 2);
      lng[i] = 1.0f + 40.0f * static_cast<float>(i) / static_cast<float>(s.rot() / 2);
    }
    m.values("rope_factors_long.weight", lng);
    m.values("rope_factors_short.weight", shrt);
  }
  for (int l = 0; l < s.n_layer; ++l)
    if (s.n_expert > 0)
      moe_layer_tensors(m, s, l, type);
    else
      layer_tensors(m, s, l);
  m.vector("output_norm.weight", s.n_embd, 1.0f, 0.05f);
  if (!s.tied) m.matrix("output.weight", s.n_embd, s.n_vocab, 0.02f);
  w.write(out);
}

}  // namespace

Runner add_make_model(CLI::App& app) {
  struct Flags {
    std::string out, shape = "llama-1b", type = "F16";
    uint64_t seed = 1;
    int threads = 0;
    std::optional<int> layers, vocab, context;
    std::optional<bool> tied;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub =
      app.add_subcommand("make-model", "write a GGUF with random weights for a model shape (benchmarks)");
  sub->group("");  // a developer tool: not listed in --help
  sub->add_option("output", f->out, "output GGUF")->required();
  sub->add_option(
         "--shape", f->shape,
         "llama-1b (Llama-3.2-1B), qwen-0.5b (Qwen2.5-0.5B), gemma3-1b (Gemma-3-1B), phi4-mini "
         "(Phi-4-mini), qwen3-30b-a3b (Qwen3-30B-A3B), gpt-oss-20b (gpt-oss-20b, MXFP4 experts) or tiny")
      ->check(one_of({kShapes[0], kShapes[1], kShapes[2], kShapes[3], kShapes[4], kShapes[5], kShapes[6]}));
  sub->add_option(
         "--type", f->type,
         "weight type: F16, F32 or Q8_0 (quantize afterwards with `ferrum quantize`; gpt-oss's experts "
         "are MXFP4 whatever the type)")
      ->check(one_of({"F16", "F32", "Q8_0"}));
  sub->add_option("--seed", f->seed, "random seed")->transform(whole(0, INT64_MAX));
  sub->add_option("--layers", f->layers, "override the number of layers")->transform(whole(1, 1024));
  sub->add_option("--vocab", f->vocab, "override the vocabulary size")->transform(whole(311, 1 << 24));
  sub->add_option("--context", f->context, "override the training context length")
      ->transform(whole(16, 1 << 24));
  sub->add_option("--tied", f->tied, "tie output and embedding matrices")
      ->check(one_of({"true", "false"}))
      ->default_str("as the shape");
  sub->add_option("-t,--threads", f->threads, "worker threads")
      ->transform(whole(1, ModelFlags::kMaxThreads))
      ->default_str("all cores");
  return [f] {
    Shape s = preset_shape(f->shape);
    if (f->layers) {
      if (*f->layers <= 0) fail("--layers must be positive, got {}", *f->layers);
      s.n_layer = *f->layers;
    }
    if (f->vocab) s.n_vocab = *f->vocab;
    if (f->context) s.n_ctx = *f->context;
    if (f->tied) s.tied = *f->tied;
    write_model(s, *dtype_from_name(f->type), f->seed, f->threads, f->out);
    std::fprintf(stderr, "wrote %s\n", f->out.c_str());
    return 0;
  };
}

}  // namespace ferrum::cli
