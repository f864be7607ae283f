#include "formats/convert_hf_bert.h"

#include <filesystem>
#include <fstream>
#include <regex>

#include "core/fail.h"
#include "formats/gguf_writer.h"
#include "formats/hf_tensor_sink.h"
#include "formats/hf_tokenizer_meta.h"
#include "formats/model_config_gguf.h"
#include "formats/safetensors.h"

namespace ferrum::hfconv {
namespace fs = std::filesystem;
namespace {

// llama.cpp pooling types.
constexpr uint32_t kPoolNone = 0, kPoolMean = 1, kPoolCls = 2, kPoolLast = 3;

// HF name (without a "bert." prefix) -> GGUF name; "" for tensors that are dropped.
std::string bert_gguf_name(const std::string& hf, const std::string& where) {
  static const std::pair<const char*, const char*> fixed[] = {
      {"embeddings.word_embeddings.weight", "token_embd.weight"},
      {"embeddings.token_type_embeddings.weight", "token_types.weight"},
      {"embeddings.position_embeddings.weight", "position_embd.weight"},
      {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
      {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
  };
  static const std::pair<const char*, const char*> per_layer[] = {
      {"attention.self.query", "attn_q"},
      {"attention.self.key", "attn_k"},
      {"attention.self.value", "attn_v"},
      {"attention.output.dense", "attn_output"},
      {"attention.output.LayerNorm", "attn_output_norm"},
      {"intermediate.dense", "ffn_up"},
      {"output.dense", "ffn_down"},
      {"output.LayerNorm", "layer_output_norm"},
  };
  for (const auto& [from, to] : fixed)
    if (hf == from) return to;
  if (hf == "embeddings.position_ids" || hf.rfind("pooler.", 0) == 0 || hf.rfind("cls.", 0) == 0) return "";
  static const std::regex layer_re(R"(encoder\.layer\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (std::regex_match(hf, m, layer_re))
    for (const auto& [from, to] : per_layer)
      if (m[2] == from)
        return fmt::format("blk.{}.{}.{}", layer_index(m[1].str(), where, hf), to, m[3].str());
  fail("{}: tensor '{}' has no GGUF equivalent for a BERT model", where, hf);
}

int bert_order(const std::string& g) {
  static const char* kFixed[] = {"token_embd.weight", "token_types.weight", "position_embd.weight",
                                 "token_embd_norm.weight", "token_embd_norm.bias"};
  static const char* kLayer[] = {"attn_q",           "attn_k", "attn_v",   "attn_output",
                                 "attn_output_norm", "ffn_up", "ffn_down", "layer_output_norm"};
  for (int i = 0; i < 5; ++i)
    if (g == kFixed[i]) return i;
  const size_t dot = g.find('.', 4);
  const int layer = layer_of(g);
  const std::string rest = g.substr(dot + 1);
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 2; ++b)
      if (rest == std::string(kLayer[i]) + (b ? ".bias" : ".weight")) return 8 + layer * 32 + 2 * i + b;
  return 8 + layer * 32 + 31;
}

// Pooling from sentence-transformers' modules.json -> <Pooling path>/config.json; nullopt if absent.
std::optional<uint32_t> pooling_type(const std::string& dir) {
  const fs::path modules = fs::path(dir) / "modules.json";
  if (!fs::exists(modules)) return std::nullopt;
  const nlohmann::json mods = hf::read_json_file(modules.string());
  if (!mods.is_array()) fail("{}: expected a JSON list of modules", modules.string());
  auto str = [](const nlohmann::json& o, const char* k) {
    const auto it = o.find(k);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const auto& m : mods) {
    if (!m.is_object() || str(m, "type") != "sentence_transformers.models.Pooling") continue;
    const std::string sub = str(m, "path");
    if (sub.find("..") != std::string::npos || (!sub.empty() && sub[0] == '/'))
      fail("{}: module path '{}' is outside the model directory", modules.string(), sub);
    const fs::path cfg = fs::path(dir) / sub / "config.json";
    const nlohmann::json c = hf::read_json_file(cfg.string());
    if (!c.is_object()) fail("{}: expected a JSON object", cfg.string());
    auto flag = [&](const char* k) {
      const auto it = c.find(k);
      return it != c.end() && it->is_boolean() && it->get<bool>();
    };
    if (flag("pooling_mode_mean_tokens")) return kPoolMean;
    if (flag("pooling_mode_cls_token")) return kPoolCls;
    if (flag("pooling_mode_lasttoken")) return kPoolLast;
    return kPoolNone;
  }
  return std::nullopt;
}

std::vector<std::string> read_wordpiece_vocab(const std::string& dir) {
  const fs::path vt = fs::path(dir) / "vocab.txt";
  std::vector<std::string> vocab;
  if (fs::exists(vt)) {
    std::ifstream f(vt);
    for (std::string line; std::getline(f, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      vocab.push_back(line);
    }
    return vocab;
  }
  const fs::path tj = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tj)) fail("{}: a BERT model needs vocab.txt or tokenizer.json", dir);
  const nlohmann::json j = hf::read_json_file(tj.string());
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object() || !j["model"].contains("vocab") ||
      !j["model"]["vocab"].is_object())
    fail("{}: expected a WordPiece 'vocab' object in 'model'", tj.string());
  const auto& v = j["model"]["vocab"];
  std::vector<std::pair<int64_t, std::string>> byid;
  for (const auto& [text, id] : v.items()) {
    if (!id.is_number_integer())
      fail("{}: model.vocab['{}'] has id {}, expected an integer", tj.string(), text, id.dump());
    byid.emplace_back(id.get<int64_t>(), text);
  }
  std::sort(byid.begin(), byid.end());
  for (size_t i = 0; i < byid.size(); ++i) {
    if (byid[i].first != static_cast<int64_t>(i))
      fail("{}: vocabulary ids are not 0..{}", tj.string(), byid.size() - 1);
    vocab.push_back(byid[i].second);
  }
  return vocab;
}

void add_bert_tokenizer(gguf::Writer& w, const std::string& dir, int64_t n_vocab) {
  std::vector<std::string> vocab = read_wordpiece_vocab(dir);
  if (static_cast<int64_t>(vocab.size()) != n_vocab)
    fail("{}: the vocabulary has {} tokens, but word_embeddings has {} rows", dir, vocab.size(), n_vocab);
  nlohmann::json tc = nlohmann::json::object();
  if (fs::exists(fs::path(dir) / "tokenizer_config.json"))
    tc = hf::read_json_file((fs::path(dir) / "tokenizer_config.json").string());
  auto special = [&](const char* key, const char* dflt) {
    const auto it = tc.find(key);
    return it != tc.end() && it->is_string() ? it->get<std::string>() : std::string(dflt);
  };
  const std::string cls = special("cls_token", "[CLS]"), sep = special("sep_token", "[SEP]"),
                    unk = special("unk_token", "[UNK]"), pad = special("pad_token", "[PAD]"),
                    mask = special("mask_token", "[MASK]");
  std::vector<int32_t> types(vocab.size(), hf::kNormal);
  std::map<std::string, int64_t> id_of;
  for (size_t i = 0; i < vocab.size(); ++i) {
    const std::string& t = vocab[i];
    id_of.emplace(t, static_cast<int64_t>(i));
    if (t == cls || t == sep || t == unk || t == pad || t == mask) {
      types[i] = hf::kControl;
    } else if (t.rfind("##", 0) == 0) {
      vocab[i] = t.substr(2);  // continuation piece
    } else {
      vocab[i] = "\xe2\x96\x81" + t;  // word-initial piece: phantom space (U+2581)
    }
  }
  w.set_string("tokenizer.ggml.model", "bert");
  w.set_string("tokenizer.ggml.pre", "default");
  w.set_string_array("tokenizer.ggml.tokens", vocab);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  // BOS is the [CLS] token: llama.cpp reads bos_token_id for BERT's leading token.
  const std::pair<const char*, const std::string*> ids[] = {{"bos", &cls},       {"cls", &cls},
                                                            {"seperator", &sep}, {"unknown", &unk},
                                                            {"padding", &pad},   {"mask", &mask}};
  for (const auto& [key, text] : ids) {
    const auto it = id_of.find(*text);
    if (it != id_of.end())
      w.set_u32(fmt::format("tokenizer.ggml.{}_token_id", key), static_cast<uint32_t>(it->second));
  }
}

}  // namespace

void convert_bert(const hf::Config& cfg, const ModelConfig& m, const std::string& hf_dir,
                  const std::string& out_gguf, const HfConvertOptions& opt) {
  const std::string pos = cfg.find_string("position_embedding_type").value_or("absolute");
  if (pos != "absolute")
    fail("{}: position_embedding_type '{}' is not supported (only absolute)", cfg.path(), pos);

  const auto st = safetensors::Tensors::open_dir(hf_dir);
  TensorSink sink;
  auto strip = [](const std::string& n) { return n.rfind("bert.", 0) == 0 ? n.substr(5) : n; };
  for (const auto& [name, dtype] : st.unsupported())
    if (!bert_gguf_name(strip(name), st.source()).empty())
      fail("{}: tensor '{}' has dtype {}; only F32, F16 and BF16 can be converted", st.source(), name, dtype);
  for (const TensorView& t : st.tensors()) {
    const std::string g = bert_gguf_name(strip(t.name), st.source());
    if (g.empty()) continue;
    if (g.rfind("blk.", 0) == 0 && layer_of(g) >= m.n_layer)
      fail("{}: tensor '{}' is beyond num_hidden_layers {}", st.source(), t.name, m.n_layer);
    // Like llama.cpp: 1-D tensors and the position / token-type embeddings are stored as F32.
    const bool force_f32 = t.n_dims <= 1 || g == "position_embd.weight" || g == "token_types.weight";
    sink.add(g, t, force_f32);
  }
  const OutTensor* emb = sink.find("token_embd.weight");
  if (!emb) fail("{}: no embeddings.word_embeddings.weight", st.source());
  if (emb->ne.size() != 2 || emb->ne[0] != m.n_embd)
    fail("{}: embeddings.word_embeddings.weight has {} columns, but hidden_size is {}", st.source(),
         emb->ne[0], m.n_embd);
  const int64_t n_tokens = emb->ne[1];
  sink.sort(bert_order);  // invalidates emb

  gguf::Writer w;
  w.set_string("general.architecture", "bert");
  w.set_string("general.type", "model");
  w.set_string("general.name", m.name);
  w.set_u32("general.file_type", sink.file_type());
  write_model_config(w, m);
  if (const auto p = pooling_type(hf_dir)) w.set_u32("bert.pooling_type", *p);
  if (opt.tokenizer) {
    w.set_u32("tokenizer.ggml.token_type_count",
              static_cast<uint32_t>(cfg.find_int("type_vocab_size").value_or(2)));
    add_bert_tokenizer(w, hf_dir, n_tokens);
  }
  sink.add_to(w);
  w.write(out_gguf, opt.progress);
}

}  // namespace ferrum::hfconv
