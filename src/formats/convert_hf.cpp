#include "formats/convert_hf.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "core/fail.h"
#include "formats/convert_hf_bert.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/hf_tensor_sink.h"
#include "formats/hf_tokenizer_meta.h"
#include "formats/safetensors.h"

namespace ferrum {
namespace fs = std::filesystem;
namespace {

struct Hparams {
  std::string arch;  // GGUF architecture
  bool permute_qk = false;
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // MoE only
  int64_t n_vocab, n_embd, n_layer, n_ff, n_head, n_head_kv, head_dim, n_ctx;
  double rope_theta, rms_eps;
};

Hparams read_hparams(const hf::Config& c) {
  Hparams h;
  const std::string& a = c.architecture();
  if (a == "llama" || a == "mistral") {
    h.arch = "llama";
    h.permute_qk = true;
  } else if (a == "qwen2" || a == "qwen3") {
    h.arch = a;
  } else if (a == "qwen3_moe") {
    h.arch = "qwen3moe";
    h.n_expert = c.get_int("num_experts");
    h.n_expert_used = c.get_int("num_experts_per_tok");
    h.n_ff_exp = c.get_int("moe_intermediate_size");
    if (h.n_expert <= 0 || h.n_expert > 4096 || h.n_expert_used <= 0 || h.n_expert_used > h.n_expert ||
        h.n_ff_exp <= 0)
      fail("{}: bad MoE config: num_experts {}, num_experts_per_tok {}, moe_intermediate_size {}", c.path(),
           h.n_expert, h.n_expert_used, h.n_ff_exp);
  } else {
    fail(
        "{}: architecture '{}' cannot be converted (supported: llama, mistral, qwen2, qwen3, qwen3_moe, "
        "bert)",
        c.path(), a);
  }
  h.n_vocab = c.get_int("vocab_size");
  h.n_embd = c.get_int("hidden_size");
  h.n_layer = c.get_int("num_hidden_layers");
  h.n_ff = c.get_int("intermediate_size");
  h.n_head = c.get_int("num_attention_heads");
  h.n_head_kv = c.find_int("num_key_value_heads").value_or(h.n_head);
  h.n_ctx = c.get_int("max_position_embeddings");
  h.rope_theta = c.find_float("rope_theta").value_or(10000.0);
  h.rms_eps = c.get_float("rms_norm_eps");
  for (auto [k, v] : {std::pair{"vocab_size", h.n_vocab},
                      {"hidden_size", h.n_embd},
                      {"num_hidden_layers", h.n_layer},
                      {"intermediate_size", h.n_ff},
                      {"num_attention_heads", h.n_head},
                      {"num_key_value_heads", h.n_head_kv},
                      {"max_position_embeddings", h.n_ctx}})
    if (v <= 0 || v > (int64_t{1} << 32))
      fail("{}: field '{}' is {}, expected a positive value", c.path(), k, v);
  if (h.n_layer > hfconv::kMaxLayerIndex + 1)
    fail("{}: field 'num_hidden_layers' is {}, expected at most {}", c.path(), h.n_layer,
         hfconv::kMaxLayerIndex + 1);
  if (h.n_head % h.n_head_kv != 0)
    fail("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", c.path(), h.n_head,
         h.n_head_kv);
  if (const auto hd = c.find_int("head_dim")) {
    h.head_dim = *hd;
  } else {
    if (h.n_embd % h.n_head != 0)
      fail("{}: hidden_size {} is not a multiple of num_attention_heads {}", c.path(), h.n_embd, h.n_head);
    h.head_dim = h.n_embd / h.n_head;
  }
  if (h.head_dim <= 0 || h.head_dim % 2 != 0)
    fail("{}: head_dim {} must be positive and even", c.path(), h.head_dim);
  return h;
}

// Llama-3 RoPE scaling as per-pair frequency divisors, computed like llama.cpp's converter
// (conversion/llama.py generate_extra_tensors). The base frequencies are float32 (powf), the rest
// double: this reproduces the fixture's rope_freqs.weight bit for bit.
std::vector<float> llama3_rope_freqs(const nlohmann::json& rs, double theta, int64_t head_dim,
                                     const std::string& where) {
  auto num = [&](const char* k, double dflt) {
    const auto it = rs.find(k);
    if (it == rs.end() || it->is_null()) return dflt;
    if (!it->is_number()) fail("{}: rope_scaling.{} has type {}, expected number", where, k, it->type_name());
    return it->get<double>();
  };
  const double factor = num("factor", 8.0), low = num("low_freq_factor", 1.0),
               high = num("high_freq_factor", 4.0);
  const double old_ctx = num("original_max_position_embeddings", 8192.0);
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  std::vector<float> out(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float freq =
        1.0f / std::pow(static_cast<float>(theta), static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const double wavelen = 2 * M_PI / static_cast<double>(freq);
    double v;
    if (wavelen < high_wavelen) {
      v = 1.0;
    } else if (wavelen > low_wavelen) {
      v = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      v = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out[i] = static_cast<float>(v);
  }
  return out;
}

// Maps an HF tensor name to its GGUF name; "" for tensors that are dropped.
std::string gguf_name(const std::string& hf, const std::string& where) {
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  static const std::pair<const char*, const char*> per_layer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},  // MoE router
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  std::smatch m;
  if (std::regex_match(hf, m, layer_re)) {
    if (m[2] == "self_attn.rotary_emb.inv_freq") return "";
    for (const auto& [from, to] : per_layer)
      if (m[2] == from) return fmt::format("blk.{}.{}", hfconv::layer_index(m[1].str(), where, hf), to);
  }
  fail("{}: tensor '{}' has no GGUF equivalent for this architecture", where, hf);
}

// model.layers.<L>.mlp.experts.<E>.<kind>_proj.weight -> (L, E, kind); nullopt for other names.
struct ExpertRef {
  int64_t layer, expert;
  std::string kind;  // gate, up, down
};
std::optional<ExpertRef> expert_ref(const std::string& hf, const std::string& where) {
  static const std::regex re(R"(model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight)");
  std::smatch m;
  if (!std::regex_match(hf, m, re)) return std::nullopt;
  return ExpertRef{hfconv::layer_index(m[1].str(), where, hf), hfconv::layer_index(m[2].str(), where, hf),
                   m[3].str()};
}

// Canonical output order (the one llama.cpp's converter produces for these families).
int order_key(const std::string& g) {
  static const char* kPerLayer[] = {
      "attn_norm.weight",     "attn_q.weight",      "attn_k.weight",       "attn_v.weight",
      "attn_q.bias",          "attn_k.bias",        "attn_v.bias",         "attn_q_norm.weight",
      "attn_k_norm.weight",   "attn_output.weight", "attn_output.bias",    "ffn_norm.weight",
      "ffn_gate.weight",      "ffn_up.weight",      "ffn_down.weight",     "ffn_gate_inp.weight",
      "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"};
  if (g == "token_embd.weight") return 0;
  if (g == "rope_freqs.weight") return 1;
  if (g == "output_norm.weight") return 1 << 29;
  if (g == "output.weight") return (1 << 29) + 1;
  const size_t dot = g.find('.', 4);
  const int layer = hfconv::layer_of(g);
  const std::string rest = g.substr(dot + 1);
  for (int i = 0; i < static_cast<int>(std::size(kPerLayer)); ++i)
    if (rest == kPerLayer[i]) return 2 + layer * 32 + i;
  return 2 + layer * 32 + 31;
}

// gguf_row[h*d + 2j + t] = hf_row[h*d + t*d/2 + j]: HF rotate-half -> GGUF adjacent pairs.
void permute_rows(const uint8_t* src, uint8_t* dst, int64_t n_head, int64_t d, size_t row_bytes) {
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t j = 0; j < d / 2; ++j)
      for (int64_t t = 0; t < 2; ++t)
        std::memcpy(dst + (h * d + 2 * j + t) * row_bytes, src + (h * d + t * d / 2 + j) * row_bytes,
                    row_bytes);
}

}  // namespace

void convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_gguf, const HfConvertOptions& opt) {
  const hf::Config cfg = hf::Config::load(hf_dir);
  if (cfg.architecture() == "bert") return hfconv::convert_bert(cfg, hf_dir, out_gguf, opt);
  const Hparams hp = read_hparams(cfg);
  const auto st = safetensors::Tensors::open_dir(hf_dir);
  const bool tied = cfg.find_bool("tie_word_embeddings").value_or(false);
  for (const auto& [name, dtype] : st.unsupported())
    if (expert_ref(name, st.source()) ||
        !gguf_name(name, st.source()).empty())  // dropped buffers (inv_freq) may have any dtype
      fail("{}: tensor '{}' has dtype {}; only F32, F16 and BF16 can be converted", st.source(), name, dtype);

  hfconv::TensorSink sink;

  // Expert matrices are stacked per layer and kind into one 3-D tensor {cols, rows, n_expert}.
  std::map<std::pair<int64_t, std::string>, std::vector<const TensorView*>> experts;

  for (const TensorView& t : st.tensors()) {
    if (const auto ex = expert_ref(t.name, st.source())) {
      if (hp.n_expert == 0)
        fail("{}: tensor '{}' is an MoE expert, but the config has no experts", st.source(), t.name);
      if (ex->layer >= hp.n_layer || ex->expert >= hp.n_expert)
        fail("{}: tensor '{}' is out of range (num_hidden_layers {}, num_experts {})", st.source(), t.name,
             hp.n_layer, hp.n_expert);
      auto& v = experts[{ex->layer, ex->kind}];
      v.resize(static_cast<size_t>(hp.n_expert), nullptr);
      v[static_cast<size_t>(ex->expert)] = &t;
      continue;
    }
    const std::string g = gguf_name(t.name, st.source());
    if (g.empty() || (g == "output.weight" && tied)) continue;
    if (g.rfind("blk.", 0) == 0) {
      const int64_t layer = hfconv::layer_of(g);
      if (layer >= hp.n_layer)
        fail("{}: tensor '{}' is for layer {}, but num_hidden_layers is {}", st.source(), t.name, layer,
             hp.n_layer);
    }
    const bool is_q = g.find(".attn_q.") != std::string::npos, is_k = g.find(".attn_k.") != std::string::npos;
    const void* data = t.data;
    if (hp.permute_qk && (is_q || is_k)) {
      const int64_t heads = is_q ? hp.n_head : hp.n_head_kv;
      const int64_t rows = t.n_dims == 1 ? t.ne[0] : t.rows();
      if (rows != heads * hp.head_dim || t.n_dims > 2)
        fail("{}: tensor '{}' has shape {} ({} rows), expected {} rows ({} heads x head_dim {})", st.source(),
             t.name, t.shape_string(), rows, heads * hp.head_dim, heads, hp.head_dim);
      uint8_t* buf = sink.alloc(t.nbytes);
      permute_rows(t.data, buf, heads, hp.head_dim, t.nbytes / static_cast<size_t>(rows));
      data = buf;
    }
    // Norms, biases and the MoE router are stored as F32 (as llama.cpp's converter does).
    const bool force_f32 = t.n_dims <= 1 || g.ends_with("ffn_gate_inp.weight");
    sink.add(g, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1)), data,
             t.nbytes, force_f32);
  }

  for (const auto& [key, list] : experts) {
    const auto& [layer, kind] = key;
    const TensorView* first = list[0];
    for (size_t e = 0; e < list.size(); ++e) {
      if (!list[e])
        fail("{}: expert {} of model.layers.{}.mlp.experts.*.{}_proj.weight is missing", st.source(), e,
             layer, kind);
      if (list[e]->type != first->type || list[e]->ne != first->ne || list[e]->n_dims != 2)
        fail("{}: tensor '{}' ({} {}) does not match expert 0 ({} {})", st.source(), list[e]->name,
             dtype_name(list[e]->type), list[e]->shape_string(), dtype_name(first->type),
             first->shape_string());
    }
    uint8_t* buf = sink.alloc(first->nbytes * list.size());
    for (size_t e = 0; e < list.size(); ++e)
      std::memcpy(buf + e * first->nbytes, list[e]->data, first->nbytes);
    sink.add(fmt::format("blk.{}.ffn_{}_exps.weight", layer, kind), first->type,
             {first->ne[0], first->ne[1], static_cast<int64_t>(list.size())}, buf,
             first->nbytes * list.size());
  }

  for (const char* need : {"token_embd.weight", "output_norm.weight"})
    if (!sink.find(need)) fail("{}: no tensor maps to '{}'", st.source(), need);
  const auto& emb = *sink.find("token_embd.weight");
  if (emb.ne.size() != 2 || emb.ne[0] != hp.n_embd)
    fail("{}: model.embed_tokens.weight has {} columns, but hidden_size is {}", st.source(), emb.ne[0],
         hp.n_embd);
  const int64_t n_vocab = emb.ne[1];

  std::vector<float> rope_freqs;
  if (const nlohmann::json* rs = cfg.find_object("rope_scaling")) {
    std::string type;
    for (const char* k : {"type", "rope_type"}) {  // rope_type wins
      const auto it = rs->find(k);
      if (it == rs->end() || it->is_null()) continue;
      if (!it->is_string())
        fail("{}: rope_scaling.{} has type {}, expected string", cfg.path(), k, it->type_name());
      type = it->get<std::string>();
    }
    if (type == "llama3") {
      rope_freqs = llama3_rope_freqs(*rs, hp.rope_theta, hp.head_dim, cfg.path());
      sink.add("rope_freqs.weight", DType::F32, {static_cast<int64_t>(rope_freqs.size())}, rope_freqs.data(),
               rope_freqs.size() * 4);
    } else if (!type.empty() && type != "default") {
      fail("{}: rope_scaling type '{}' is not supported (only llama3)", cfg.path(), type);
    }
  }
  sink.sort(order_key);

  gguf::Writer w;
  const std::string A = hp.arch;
  w.set_string("general.architecture", A);
  w.set_string("general.type", "model");
  w.set_string("general.name", !opt.name.empty() ? opt.name : hfconv::dir_name(hf_dir));
  // llama.cpp file types: 0 all F32, 1 mostly F16, 32 mostly BF16.
  w.set_u32("general.file_type", sink.file_type());
  w.set_u32(A + ".vocab_size", static_cast<uint32_t>(hp.n_vocab));
  w.set_u32(A + ".context_length", static_cast<uint32_t>(hp.n_ctx));
  w.set_u32(A + ".embedding_length", static_cast<uint32_t>(hp.n_embd));
  w.set_u32(A + ".block_count", static_cast<uint32_t>(hp.n_layer));
  w.set_u32(A + ".feed_forward_length", static_cast<uint32_t>(hp.n_ff));
  w.set_u32(A + ".attention.head_count", static_cast<uint32_t>(hp.n_head));
  w.set_u32(A + ".attention.head_count_kv", static_cast<uint32_t>(hp.n_head_kv));
  w.set_f32(A + ".rope.freq_base", static_cast<float>(hp.rope_theta));
  w.set_f32(A + ".attention.layer_norm_rms_epsilon", static_cast<float>(hp.rms_eps));
  if (A == "llama") {
    w.set_u32(A + ".rope.dimension_count", static_cast<uint32_t>(hp.head_dim));
  }
  if (A != "llama" || hp.head_dim * hp.n_head != hp.n_embd) {
    w.set_u32(A + ".attention.key_length", static_cast<uint32_t>(hp.head_dim));
    w.set_u32(A + ".attention.value_length", static_cast<uint32_t>(hp.head_dim));
  }
  if (hp.n_expert > 0) {
    w.set_u32(A + ".expert_count", static_cast<uint32_t>(hp.n_expert));
    w.set_u32(A + ".expert_used_count", static_cast<uint32_t>(hp.n_expert_used));
    w.set_u32(A + ".expert_feed_forward_length", static_cast<uint32_t>(hp.n_ff_exp));
  }
  const bool swa = cfg.architecture() == "mistral" || cfg.find_bool("use_sliding_window").value_or(false);
  if (swa) {
    if (const auto sw = cfg.find_int("sliding_window"))
      w.set_u32(A + ".attention.sliding_window", static_cast<uint32_t>(*sw));
  }
  if (opt.tokenizer) hf::add_tokenizer_metadata(w, hf_dir, cfg, n_vocab);

  sink.add_to(w);
  w.write(out_gguf);
}

}  // namespace ferrum
