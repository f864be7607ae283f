// Tokenizer from a Hugging Face directory: tokenizer.json (model, normalizer, pre_tokenizer,
// post_processor, decoder, added_tokens), tokenizer_config.json (bos/eos, add_bos_token,
// clean_up_tokenization_spaces, chat_template), generation_config.json (eos ids) and
// chat_template.jinja. Follows HF `tokenizers` semantics.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fail.h"
#include "tokenizer/decoder.h"
#include "tokenizer/load_hf_spec.h"
#include "tokenizer/load_steps.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

using json = nlohmann::json;

json parse_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

// "<s>" or {"content": "<s>", ...} (tokenizer_config.json special tokens).
std::string token_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return "";
}

// A slow BertTokenizer directory (vocab.txt + tokenizer_config.json) as the tokenizer.json that
// transformers' BertConverter would produce.
json bert_vocab_txt(const std::string& path, const json& cfg) {
  const std::string cls = cfg.value("tokenizer_class", std::string("BertTokenizer"));
  if (cls.rfind("BertTokenizer", 0) != 0) {
    fail("{}: tokenizer.json not found (vocab.txt is only supported for BertTokenizer, not '{}')", path, cls);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  json vocab = json::object();
  std::string line;
  int64_t id = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    vocab[line] = id++;
  }
  auto tok_of = [&](const char* key, const char* def) {
    const std::string s = cfg.contains(key) ? token_string(cfg[key]) : def;
    return s.empty() ? std::string(def) : s;
  };
  const std::string unk = tok_of("unk_token", "[UNK]"), cls_tok = tok_of("cls_token", "[CLS]"),
                    sep_tok = tok_of("sep_token", "[SEP]");
  json added = json::array();
  for (const char* key : {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"}) {
    const std::string s = cfg.contains(key) ? token_string(cfg[key]) : "";
    if (!s.empty() && vocab.contains(s))
      added.push_back({{"id", vocab[s]}, {"content", s}, {"special", true}});
  }
  for (const std::string& s : {cls_tok, sep_tok}) {
    if (!vocab.contains(s)) fail("{}: special token '{}' is not in the vocabulary", path, s);
  }
  json tj;
  tj["model"] = {{"type", "WordPiece"},
                 {"unk_token", unk},
                 {"continuing_subword_prefix", "##"},
                 {"max_input_chars_per_word", 100},
                 {"vocab", vocab}};
  tj["normalizer"] = {{"type", "BertNormalizer"},
                      {"clean_text", true},
                      {"handle_chinese_chars", cfg.value("tokenize_chinese_chars", true)},
                      {"strip_accents", cfg.contains("strip_accents") ? cfg["strip_accents"] : json()},
                      {"lowercase", cfg.value("do_lower_case", true)}};
  tj["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  tj["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", cls_tok}}}},
                              {{"Sequence", {{"id", "A"}}}},
                              {{"SpecialToken", {{"id", sep_tok}}}}})},
      {"special_tokens", {{cls_tok, {{"ids", {vocab[cls_tok]}}}}, {sep_tok, {{"ids", {vocab[sep_tok]}}}}}}};
  tj["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
  tj["added_tokens"] = added;
  return tj;
}

// First id whose text is s, or -1 (a scan: the text index is built by finalize()).
int32_t first_id_of(const std::vector<std::string>& text, std::string_view s) {
  const auto it = std::find(text.begin(), text.end(), s);
  return it == text.end() ? -1 : static_cast<int32_t>(it - text.begin());
}

// Vocabulary size from the ids of model.vocab and added_tokens, checked before anything is sized
// by them: gaps are allowed (they become unassigned tokens) but not more unassigned ids than entries.
size_t checked_vocab_size(const json& vocab, const json& added, const std::string& path) {
  const size_t n_entries = vocab.size() + added.size();
  const int64_t max_id = 2 * static_cast<int64_t>(n_entries) + 1024;
  auto check_id = [&](const json& v, const std::string& what) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= max_id)
      fail("{}: {} has id {}, expected an integer in [0, {}) for a vocabulary of {} entries", path, what,
           v.dump(), max_id, n_entries);
    return static_cast<size_t>(v.get<int64_t>());
  };
  size_t n = 0;
  for (const auto& [k, v] : vocab.items())
    n = std::max(n, check_id(v, fmt::format("model.vocab['{}']", k)) + 1);
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string())
      fail("{}: added_tokens[{}] needs an integer 'id' and a string 'content'", path, i);
    n = std::max(n, check_id(a["id"], fmt::format("added_tokens[{}]", i)) + 1);
  }
  return n;
}

// One entry of model.merges: "a b" or ["a", "b"].
void merge_pair(const json& m, size_t r, const std::string& where, std::string& a, std::string& b) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    std::string_view va, vb;
    if (!split_merge(s, va, vb)) fail("{}: merges[{}] '{}' has no space", where, r, s);
    a = va, b = vb;
  } else if (m.is_array() && m.size() == 2) {
    a = m[0].get<std::string>(), b = m[1].get<std::string>();
  } else {
    fail("{}: merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", where, r);
  }
}

// A Hugging Face tokenizer directory, read one step at a time. stage() names the file and field
// being read, for the message of a JSON type error.
class HfLoader {
 public:
  explicit HfLoader(const std::string& dir) : dir_(dir) {}
  std::unique_ptr<TokenizerImpl> load();
  const std::string& path() const { return tj_path_; }
  const std::string& stage() const { return stage_; }

 private:
  std::string file(const char* name) const { return (std::filesystem::path(dir_) / name).string(); }
  std::string model_string(const char* key) const {
    const json& m = *model_;
    return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : "";
  }
  void read_files();
  void read_model_kind();
  void read_vocab();
  void read_added_tokens(const json& added, std::vector<uint8_t>& filled);
  void read_pipeline();
  void read_model_options();
  void read_special_tokens();
  void read_generation_config();
  void read_chat_template();
  void read_post_processor();
  void read_merges();

  std::string dir_, tj_path_, stage_ = "model";
  json cfg_ = json::object(), tj_;
  const json* model_ = nullptr;
  std::unique_ptr<TokenizerImpl> t_;
};

std::unique_ptr<TokenizerImpl> HfLoader::load() {
  read_files();
  t_ = std::make_unique<TokenizerImpl>();
  t_->sem = Semantics::HF;
  t_->add_space_prefix = false;
  t_->piece_mode = TokenizerImpl::PieceMode::Raw;
  read_model_kind();
  read_vocab();
  read_pipeline();
  read_model_options();
  read_special_tokens();
  read_generation_config();
  read_chat_template();
  if (cfg_.value("clean_up_tokenization_spaces", false)) t_->cleanup = cleanup_passes(Cleanup::Transformers);
  t_->finalize();
  read_post_processor();
  read_merges();
  return std::move(t_);
}

// tokenizer_config.json (optional) and tokenizer.json, or a BERT vocab.txt in its place.
void HfLoader::read_files() {
  namespace fs = std::filesystem;
  tj_path_ = file("tokenizer.json");
  const std::string cfg_path = file("tokenizer_config.json");
  if (fs::exists(cfg_path)) cfg_ = parse_json(cfg_path);
  if (fs::exists(tj_path_)) {
    tj_ = parse_json(tj_path_);
  } else if (fs::exists(fs::path(dir_) / "vocab.txt")) {
    tj_path_ = file("vocab.txt");
    tj_ = bert_vocab_txt(tj_path_, cfg_);
  } else {
    fail("{}: tokenizer.json not found", dir_);
  }
  if (!tj_.contains("model") || !tj_["model"].is_object()) fail("{}: 'model' missing", tj_path_);
  model_ = &tj_["model"];
}

void HfLoader::read_model_kind() {
  const json& model = *model_;
  std::string mtype = model.value("type", "");
  if (mtype.empty())
    mtype = model.contains("merges") ? "BPE" : model.contains("continuing_subword_prefix") ? "WordPiece" : "";
  if (mtype == "BPE") {
    t_->algo = Algo::Bpe;
  } else if (mtype == "WordPiece") {
    t_->algo = Algo::WordPiece;
  } else {
    fail("{}: model type '{}' is not supported (expected BPE or WordPiece)", tj_path_, mtype);
  }
}

// Vocabulary: model.vocab, then added_tokens; ids nobody names become unassigned tokens.
void HfLoader::read_vocab() {
  stage_ = "model.vocab";
  const json& vocab = model_->at("vocab");
  if (!vocab.is_object()) fail("{}: model.vocab is not an object", tj_path_);
  const json added = tj_.value("added_tokens", json::array());
  if (!added.is_array()) fail("{}: added_tokens is not a list", tj_path_);
  const size_t n = checked_vocab_size(vocab, added, tj_path_);
  t_->text.assign(n, std::string());
  t_->type.assign(n, TokenType::Normal);
  std::vector<uint8_t> filled(n, 0);
  for (const auto& [k, v] : vocab.items()) {
    const auto id = static_cast<size_t>(v.get<int64_t>());
    t_->text[id] = k;
    filled[id] = 1;
  }
  stage_ = "added_tokens";
  read_added_tokens(added, filled);
  for (size_t i = 0; i < n; ++i) {
    if (!filled[i]) {
      t_->text[i] = "[ferrum:unassigned_" + std::to_string(i) + "]";
      t_->type[i] = TokenType::Unused;
    }
  }
}

void HfLoader::read_added_tokens(const json& added, std::vector<uint8_t>& filled) {
  for (const auto& a : added) {
    const auto id = static_cast<int32_t>(a["id"].get<int64_t>());
    t_->text[id] = a["content"].get<std::string>();
    filled[id] = 1;
    const bool special = a.value("special", false);
    t_->type[id] = special ? TokenType::Control : TokenType::UserDefined;
    AddedToken at{id, special};
    at.lstrip = a.value("lstrip", false);
    at.rstrip = a.value("rstrip", false);
    t_->added.push_back(at);
  }
}

// normalizer, pre_tokenizer and decoder (load_hf_spec.cpp).
void HfLoader::read_pipeline() {
  stage_ = "normalizer";
  if (tj_.contains("normalizer")) parse_hf_normalizer(tj_["normalizer"], t_->normalizers, tj_path_);
  stage_ = "pre_tokenizer";
  if (tj_.contains("pre_tokenizer")) parse_hf_pre_tokenizer(tj_["pre_tokenizer"], *t_, tj_path_);
  stage_ = "decoder";
  if (tj_.contains("decoder")) parse_hf_decoder(tj_["decoder"], *t_, tj_path_);
  stage_ = "model";
}

// The model's options (BPE: byte fallback, unknown fusing, ignore_merges; WordPiece: prefix, word
// length).
void HfLoader::read_model_options() {
  const json& model = *model_;
  if (t_->algo == Algo::Bpe) {
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0) {
      fail("{}: BPE dropout is not supported", tj_path_);
    }
    if (!model_string("continuing_subword_prefix").empty() || !model_string("end_of_word_suffix").empty()) {
      fail("{}: BPE continuing_subword_prefix/end_of_word_suffix are not supported", tj_path_);
    }
    t_->byte_fallback = model.value("byte_fallback", false);
    t_->fuse_unk = model.value("fuse_unk", false);
    t_->ignore_merges = model.value("ignore_merges", false);
  } else {
    t_->wp_prefix = model.value("continuing_subword_prefix", std::string("##"));
    t_->wp_max_chars = model.value("max_input_chars_per_word", size_t(100));
  }
  if (t_->algo == Algo::Bpe && t_->byte_level) t_->piece_mode = TokenizerImpl::PieceMode::ByteLevel;
  // Byte-fallback tokens are typed Byte so they render as bytes.
  if (t_->byte_fallback) {
    for (size_t i = 0; i < t_->text.size(); ++i) {
      if (t_->type[i] == TokenType::Normal && is_byte_token_text(t_->text[i])) t_->type[i] = TokenType::Byte;
    }
  }
}

// BOS/EOS/PAD (and WordPiece's CLS/SEP) from tokenizer_config.json; the model's unknown token.
void HfLoader::read_special_tokens() {
  stage_ = "special tokens (tokenizer_config.json)";
  auto cfg_token = [&](const char* key) -> int32_t {
    if (!cfg_.contains(key)) return -1;
    const std::string s = token_string(cfg_[key]);
    return s.empty() ? -1 : first_id_of(t_->text, s);
  };
  t_->bos = cfg_token("bos_token");
  t_->eos = cfg_token("eos_token");
  t_->pad = cfg_token("pad_token");
  if (t_->algo == Algo::WordPiece) {
    const int32_t cls = cfg_token("cls_token"), sep = cfg_token("sep_token");
    if (t_->bos < 0) t_->bos = cls;
    t_->sep = sep;
    if (t_->eos < 0) t_->eos = sep;
  }
  std::string unk = model_string("unk_token");
  // WordPiece maps every unknown word to its unknown token (HF's default "[UNK]"): it must exist.
  if (unk.empty() && t_->algo == Algo::WordPiece) unk = "[UNK]";
  if (!unk.empty()) {
    t_->unk = first_id_of(t_->text, unk);
    if (t_->unk < 0) fail("{}: unk_token '{}' is not in the vocabulary", tj_path_, unk);
  }
}

// generation_config.json's eos_token_id (one id or a list): end-of-generation ids.
void HfLoader::read_generation_config() {
  const std::string gen_path = file("generation_config.json");
  if (!std::filesystem::exists(gen_path)) return;
  stage_ = "generation_config.json eos_token_id";
  const json gen = parse_json(gen_path);
  if (!gen.contains("eos_token_id")) return;
  const json& e = gen["eos_token_id"];
  std::vector<int64_t> ids;
  if (e.is_number_integer()) ids.push_back(e.get<int64_t>());
  if (e.is_array()) {
    for (const auto& v : e) ids.push_back(v.get<int64_t>());
  }
  for (int64_t id : ids) {
    if (id < 0 || id >= static_cast<int64_t>(t_->text.size()))
      fail("{}: eos_token_id {} out of range", gen_path, id);
    t_->eog.push_back(static_cast<int32_t>(id));
  }
  if (t_->eos < 0 && !ids.empty()) t_->eos = static_cast<int32_t>(ids[0]);
}

// Chat template: tokenizer_config.json, else chat_template.jinja, else chat_template.json (what
// transformers saves next to a vision-language model's processor: {"chat_template": "..."}).
void HfLoader::read_chat_template() {
  stage_ = "chat_template (tokenizer_config.json)";
  if (cfg_.contains("chat_template")) {
    const json& ct = cfg_["chat_template"];
    if (ct.is_string()) {
      t_->chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& e : ct) {
        if (e.value("name", "") == "default") t_->chat_template = e.value("template", "");
      }
    }
  }
  const std::string jinja_path = file("chat_template.jinja");
  if (t_->chat_template.empty() && std::filesystem::exists(jinja_path))
    t_->chat_template = read_file(jinja_path);
  const std::string json_path = file("chat_template.json");
  if (t_->chat_template.empty() && std::filesystem::exists(json_path)) {
    stage_ = "chat_template (chat_template.json)";
    const json j = parse_json(json_path);
    if (!j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string())
      fail("{}: expected an object with a string 'chat_template'", json_path);
    t_->chat_template = j["chat_template"].get<std::string>();
  }
}

void HfLoader::read_post_processor() {
  stage_ = "post_processor";
  if (tj_.contains("post_processor")) parse_hf_post_processor(tj_["post_processor"], *t_, tj_path_);
  // transformers' Llama/Gemma tokenizers rebuild the template from add_bos_token/add_eos_token.
  const std::string cls = cfg_.value("tokenizer_class", "");
  if ((cls.rfind("LlamaTokenizer", 0) == 0 || cls.rfind("CodeLlamaTokenizer", 0) == 0 ||
       cls.rfind("GemmaTokenizer", 0) == 0) &&
      (cfg_.contains("add_bos_token") || cfg_.contains("add_eos_token"))) {
    t_->prefix_ids.clear();
    t_->suffix_ids.clear();
    if (cfg_.value("add_bos_token", true) && t_->bos >= 0) t_->prefix_ids.push_back(t_->bos);
    if (cfg_.value("add_eos_token", false) && t_->eos >= 0) t_->suffix_ids.push_back(t_->eos);
  }
  for (int32_t id : t_->prefix_ids) t_->check_id(id, "post_processor");
  for (int32_t id : t_->suffix_ids) t_->check_id(id, "post_processor");
}

// BPE merges: "a b" strings or ["a", "b"] pairs; rank = position.
void HfLoader::read_merges() {
  stage_ = "model.merges";
  if (t_->algo != Algo::Bpe || !model_->contains("merges")) return;
  const json& merges = (*model_)["merges"];
  t_->merges.reserve(merges.size());
  std::string a, b;
  for (size_t r = 0; r < merges.size(); ++r) {
    merge_pair(merges[r], r, tj_path_, a, b);
    if (!add_merge(*t_, a, b, static_cast<int32_t>(r))) {
      fail("{}: merges[{}] ('{}', '{}') refers to a token missing from the vocabulary", tj_path_, r, a, b);
    }
  }
}

}  // namespace

std::unique_ptr<TokenizerImpl> load_hf_dir(const std::string& dir) {
  HfLoader loader(dir);
  try {
    return loader.load();
  } catch (const json::exception& e) {
    // A field of an unexpected JSON type (or a missing one read with at()).
    fail("{}: {}: {}", loader.path(), loader.stage(), e.what());
  }
}

}  // namespace ferrum::tok
