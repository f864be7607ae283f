#include "formats/convert_hf.h"

#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "core/fail.h"
#include "core/quant.h"
#include "formats/convert_hf_bert.h"
#include "formats/family.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/hf_gpt_oss.h"
#include "formats/hf_model_config.h"
#include "formats/hf_quant.h"
#include "formats/hf_tensor_sink.h"
#include "formats/hf_tokenizer_meta.h"
#include "formats/model_config_gguf.h"
#include "formats/safetensors.h"

namespace ferrum {
namespace fs = std::filesystem;
namespace {

// Maps an HF tensor name to its GGUF name; "" for tensors that are dropped.
std::string gguf_name(const std::string& stored, const std::string& where) {
  const std::string hf = hf::text_model_tensor(stored);  // a vision-language checkpoint's text model
  if (hf.empty()) return "";                              // its vision tower: not converted
  static const std::regex layer_re(R"(model\.layers\.(\d+)\.(.+))");
  static const std::pair<const char*, const char*> per_layer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // fused (Phi-3)
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},      // fused gate|up, llama.cpp's phi3 ffn_up
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},   // gemma2: attn_post_norm (add_tensor)
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},  // gemma2
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},    // MoE router
      {"mlp.router.weight", "ffn_gate_inp.weight"},  // gpt-oss
      {"mlp.router.bias", "ffn_gate_inp.bias"},
      {"self_attn.sinks", "attn_sinks.weight"},
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
      "attn_norm.weight",     "attn_q.weight",        "attn_k.weight",
      "attn_v.weight",        "attn_q.bias",          "attn_k.bias",
      "attn_v.bias",          "attn_q_norm.weight",   "attn_k_norm.weight",
      "attn_output.weight",   "attn_output.bias",     "ffn_norm.weight",
      "ffn_gate.weight",      "ffn_up.weight",        "ffn_down.weight",
      "ffn_gate_inp.weight",  "ffn_gate_exps.weight", "ffn_up_exps.weight",
      "ffn_down_exps.weight", "attn_sinks.weight",    "post_attention_norm.weight",
      "ffn_gate_inp.bias",    "ffn_gate_exps.bias",   "ffn_up_exps.bias",
      "ffn_down_exps.bias"};
  if (g == "token_embd.weight") return 0;
  if (g.rfind("rope_", 0) == 0) return 1;  // rope_freqs, rope_factors_long/short
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

using ExpertMap = std::map<std::pair<int64_t, std::string>, std::vector<const TensorView*>>;

// Files an expert matrix under its (layer, kind) stack.
void collect_expert(ExpertMap& experts, const ModelConfig& m, const ExpertRef& ex, const TensorView& t,
                    const std::string& src) {
  if (m.n_expert == 0) fail("{}: tensor '{}' is an MoE expert, but the config has no experts", src, t.name);
  if (ex.layer >= m.n_layer || ex.expert >= m.n_expert)
    fail("{}: tensor '{}' is out of range (num_hidden_layers {}, num_experts {})", src, t.name, m.n_layer,
         m.n_expert);
  auto& v = experts[{ex.layer, ex.kind}];
  v.resize(static_cast<size_t>(m.n_expert), nullptr);
  v[static_cast<size_t>(ex.expert)] = &t;
}

// Adds a (non-expert) tensor under its GGUF name; for llama/mistral Q/K rows are permuted per head.
void add_tensor(hfconv::TensorSink& sink, const ModelConfig& m, const TensorView& t, const std::string& src) {
  const Family& family = family_of(m.arch);
  std::string g = gguf_name(t.name, src);
  // post_attention_layernorm: after attention in sandwich-norm families, else before the FFN, under
  // the family's GGUF name for that norm.
  if (g.ends_with(".ffn_norm.weight") && t.name.ends_with("post_attention_layernorm.weight"))
    g.replace(g.size() - std::strlen("ffn_norm.weight"), std::string::npos,
              m.post_norms ? "post_attention_norm.weight" : family.gguf_ffn_norm);
  if (family.hf_norm_plus_one && g.ends_with("norm.weight")) {  // HF holds w of 1 + w; GGUF the scale
    float* v = reinterpret_cast<float*>(sink.alloc(t.n_elements() * sizeof(float)));
    dequantize_row(t.type, t.data, v, t.n_elements());
    for (int64_t i = 0; i < t.n_elements(); ++i) v[i] += 1.0f;
    sink.add(g, DType::F32, {t.n_elements()}, v, t.n_elements() * sizeof(float));
    return;
  }
  if (g.empty() || (g == "output.weight" && m.tied_embeddings)) return;
  if (g.rfind("blk.", 0) == 0) {
    const int64_t layer = hfconv::layer_of(g);
    if (layer >= m.n_layer)
      fail("{}: tensor '{}' is for layer {}, but num_hidden_layers is {}", src, t.name, layer, m.n_layer);
  }
  const bool is_q = g.find(".attn_q.") != std::string::npos, is_k = g.find(".attn_k.") != std::string::npos;
  const void* data = t.data;
  if (gguf_permutes_qk(m.arch) && (is_q || is_k)) {
    const int64_t heads = is_q ? m.n_head : m.n_head_kv;
    const int64_t rows = t.n_dims == 1 ? t.ne[0] : t.rows();
    if (rows != heads * m.head_dim || t.n_dims > 2)
      fail("{}: tensor '{}' has shape {} ({} rows), expected {} rows ({} heads x head_dim {})", src, t.name,
           t.shape_string(), rows, heads * m.head_dim, heads, m.head_dim);
    uint8_t* buf = sink.alloc(t.nbytes);
    permute_rows(t.data, buf, heads, m.head_dim, t.nbytes / static_cast<size_t>(rows));
    data = buf;
  }
  // Norms, biases and the MoE router are stored as F32 (as llama.cpp's converter does).
  const bool force_f32 = t.n_dims <= 1 || g.ends_with("ffn_gate_inp.weight");
  sink.add(g, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1)), data,
           t.nbytes, force_f32);
}

// Stacks each layer's expert matrices of one kind into a 3-D tensor {cols, rows, n_expert}.
void add_experts(hfconv::TensorSink& sink, const ExpertMap& experts, const std::string& src) {
  for (const auto& [key, list] : experts) {
    const auto& [layer, kind] = key;
    const TensorView* first = list[0];
    for (size_t e = 0; e < list.size(); ++e) {
      if (!list[e])
        fail("{}: expert {} of model.layers.{}.mlp.experts.*.{}_proj.weight is missing", src, e, layer, kind);
      if (list[e]->type != first->type || list[e]->ne != first->ne || list[e]->n_dims != 2)
        fail("{}: tensor '{}' ({} {}) does not match expert 0 ({} {})", src, list[e]->name,
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
}

// A GPTQ/AWQ layer ("<layer>.qweight" names it) as "<layer>.weight" in its exact GGUF type
// (formats/hf_quant.h). Act-order layers have reordered columns, which GGUF cannot hold: they are
// refused, or with allow_requantize dequantized and quantized again to that type (not exact).
TensorView quantized_layer(hfconv::TensorSink& sink, const hfquant::QuantConfig& q,
                           const safetensors::Tensors& st, const std::string& qweight_name,
                           bool allow_requantize) {
  const std::string layer = qweight_name.substr(0, qweight_name.size() - std::strlen(".qweight"));
  TensorView t = hfquant::decode_linear(
      q, st, layer, layer + ".weight", [&](size_t n) { return sink.alloc(n); }, hfquant::Storage::Gguf);
  if (!t.input_order) return t;
  if (!allow_requantize)
    fail(
        "{}: '{}' is quantized with act-order (desc_act): its columns are in another order, which no GGUF "
        "type holds. Run the directory with ferrum as it is, or convert with --allow-requantize to write "
        "it requantized to {} (not exact)",
        q.where, layer, dtype_name(t.type));
  std::vector<float> row(t.cols()), natural(t.cols());
  uint8_t* dst = sink.alloc(t.nbytes);
  for (int64_t r = 0; r < t.rows(); ++r) {
    dequantize_row(t.type, t.row(r), row.data(), t.cols());
    for (int64_t j = 0; j < t.cols(); ++j) natural[t.input_order[j]] = row[j];
    quantize_row(t.type, natural.data(), dst + r * t.row_bytes(), t.cols());
  }
  t.data = dst;
  t.input_order = nullptr;
  return t;
}

// All tensors of the directory under GGUF names, in llama.cpp's order; returns the vocabulary
// size (rows of the embedding).
int64_t collect_tensors(hfconv::TensorSink& sink, const ModelConfig& m, const safetensors::Tensors& st,
                        const hfquant::QuantConfig& q, bool allow_requantize) {
  for (const auto& [name, dtype] : st.unsupported())
    if (expert_ref(name, st.source()) ||
        !gguf_name(name, st.source()).empty())  // dropped buffers (inv_freq) may have any dtype
      fail("{}: tensor '{}' has dtype {}; only F32, F16 and BF16 can be converted", st.source(), name, dtype);
  const bool fused_experts = family_of(m.arch).hf_fused_experts;  // gpt-oss's, converted after the loop
  ExpertMap experts;
  std::deque<TensorView> decoded;  // GPTQ/AWQ layers (experts point at them until add_experts)
  for (const TensorView& stored : st.tensors()) {
    const TensorView* tp = &stored;
    if (fused_experts && hfconv::is_gpt_oss_expert_part(stored.name)) continue;
    if (q.method != hfquant::Method::None && hfquant::is_quant_part(stored.name)) {
      if (!stored.name.ends_with(".qweight")) continue;  // read with their .qweight
      tp = &decoded.emplace_back(quantized_layer(sink, q, st, stored.name, allow_requantize));
    } else if (stored.type == DType::I32 || stored.type == DType::I8) {
      fail(
          "{}: tensor '{}' has dtype {}; only F32, F16 and BF16 tensors, GPTQ/AWQ layers and gpt-oss's MXFP4 "
          "experts can be converted",
          st.source(), stored.name, stored.type == DType::I8 ? "U8" : "I32");
    }
    const TensorView& t = *tp;
    if (const auto ex = expert_ref(t.name, st.source())) {
      collect_expert(experts, m, *ex, t, st.source());
    } else {
      add_tensor(sink, m, t, st.source());
    }
  }
  add_experts(sink, experts, st.source());
  if (fused_experts)
    for (int l = 0; l < m.n_layer; ++l)
      for (const hfconv::OutTensor& t :
           hfconv::gpt_oss_experts(st, m, l, [&](size_t n) { return sink.alloc(n); }))
        sink.add(t.name, t.type, t.ne, t.data, t.nbytes);
  for (const char* need : {"token_embd.weight", "output_norm.weight"})
    if (!sink.find(need)) fail("{}: no tensor maps to '{}'", st.source(), need);
  const auto& emb = *sink.find("token_embd.weight");
  if (emb.ne.size() != 2 || emb.ne[0] != m.n_embd)
    fail("{}: model.embed_tokens.weight has {} columns, but hidden_size is {}", st.source(), emb.ne[0],
         m.n_embd);
  const int64_t n_vocab = emb.ne[1];
  if (!m.rope_freq_factors.empty())
    sink.add("rope_freqs.weight", DType::F32, {static_cast<int64_t>(m.rope_freq_factors.size())},
             m.rope_freq_factors.data(), m.rope_freq_factors.size() * sizeof(float));
  for (const auto& [name, f] : {std::pair{"rope_factors_long.weight", &m.longrope.long_factors},
                                std::pair{"rope_factors_short.weight", &m.longrope.short_factors}})
    if (!f->empty())
      sink.add(name, DType::F32, {static_cast<int64_t>(f->size())}, f->data(), f->size() * sizeof(float));
  sink.sort(order_key);
  return n_vocab;
}

}  // namespace

void convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_gguf, const HfConvertOptions& opt) {
  const hf::Config cfg = hf::Config::load(hf_dir);
  const ModelConfig m = hf::model_config(cfg, !opt.name.empty() ? opt.name : hfconv::dir_name(hf_dir));
  if (m.is_encoder()) return hfconv::convert_bert(cfg, m, hf_dir, out_gguf, opt);
  const auto st = safetensors::Tensors::open_dir(hf_dir);
  hfconv::TensorSink sink;
  const int64_t n_vocab = collect_tensors(sink, m, st, hfquant::read_quant_config(cfg), opt.allow_requantize);

  gguf::Writer w;
  w.set_string("general.architecture", gguf_arch(m.arch));
  w.set_string("general.type", "model");
  w.set_string("general.name", m.name);
  // llama.cpp file types: 0 all F32, 1 mostly F16, 32 mostly BF16, 2/7/8 mostly Q4_0/Q8_0/Q5_0.
  w.set_u32("general.file_type", sink.file_type());
  write_model_config(w, m);
  if (opt.tokenizer) hf::add_tokenizer_metadata(w, hf_dir, cfg, n_vocab);
  sink.add_to(w);
  w.write(out_gguf, opt.progress);
}

}  // namespace ferrum
