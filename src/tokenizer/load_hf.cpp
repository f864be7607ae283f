// Tokenizer from a Hugging Face directory: tokenizer.json (model, normalizer, pre_tokenizer,
// post_processor, decoder, added_tokens), tokenizer_config.json (bos/eos, add_bos_token,
// clean_up_tokenization_spaces, chat_template), generation_config.json (eos ids) and
// chat_template.jinja. Follows HF `tokenizers` semantics.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/fail.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

using json = nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

json parse_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
}

std::string str_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) fail("{}: field '{}' missing or not a string", where, key);
  return j[key].get<std::string>();
}

// "<s>" or {"content": "<s>", ...} (tokenizer_config.json special tokens).
std::string token_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return "";
}

std::string quote_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

void parse_normalizer(const json& j, std::vector<NormStep>& out, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " normalizer");
  if (type == "Sequence") {
    for (const auto& n : j.at("normalizers")) parse_normalizer(n, out, where);
  } else if (type == "NFC") {
    out.push_back({NormStep::NFC});
  } else if (type == "NFD") {
    out.push_back({NormStep::NFD});
  } else if (type == "Lowercase") {
    out.push_back({NormStep::Lowercase});
  } else if (type == "StripAccents") {
    out.push_back({NormStep::StripAccents});
  } else if (type == "Prepend") {
    NormStep st{NormStep::Prepend};
    st.a = str_field(j, "prepend", where + " Prepend normalizer");
    out.push_back(st);
  } else if (type == "Replace") {
    NormStep st{NormStep::Replace};
    const json& p = j.at("pattern");
    if (!p.contains("String")) fail("{}: Replace normalizer with a Regex pattern is not supported", where);
    st.a = p["String"].get<std::string>();
    st.b = str_field(j, "content", where + " Replace normalizer");
    out.push_back(st);
  } else if (type == "BertNormalizer") {
    NormStep st{NormStep::Bert};
    st.clean_text = j.value("clean_text", true);
    st.chinese = j.value("handle_chinese_chars", true);
    st.lowercase = j.value("lowercase", true);
    st.strip_accents = j.contains("strip_accents") && j["strip_accents"].is_boolean()
                           ? j["strip_accents"].get<bool>()
                           : st.lowercase;
    out.push_back(st);
  } else {
    fail(
        "{}: normalizer type '{}' is not supported (supported: Sequence, NFC, NFD, Lowercase, "
        "StripAccents, Prepend, Replace, BertNormalizer)",
        where, type);
  }
}

PreTokStep::Behavior parse_behavior(const std::string& b, const std::string& where) {
  if (b == "Isolated") return PreTokStep::Isolated;
  if (b == "Removed") return PreTokStep::Removed;
  if (b == "MergedWithPrevious") return PreTokStep::MergedWithPrevious;
  if (b == "MergedWithNext") return PreTokStep::MergedWithNext;
  if (b == "Contiguous") return PreTokStep::Contiguous;
  fail("{}: Split behavior '{}' is unknown", where, b);
}

void parse_pretok(const json& j, TokenizerImpl& t, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " pre_tokenizer");
  if (type == "Sequence") {
    for (const auto& p : j.at("pretokenizers")) parse_pretok(p, t, where);
  } else if (type == "Split") {
    PreTokStep st{PreTokStep::Split};
    const json& p = j.at("pattern");
    st.regex = std::make_shared<Regex>(p.contains("Regex") ? p["Regex"].get<std::string>()
                                                           : quote_regex(p.at("String").get<std::string>()));
    st.behavior = parse_behavior(j.value("behavior", "Isolated"), where);
    st.invert = j.value("invert", false);
    t.pretok.push_back(std::move(st));
  } else if (type == "ByteLevel") {
    t.byte_level = true;
    if (j.value("add_prefix_space", false)) {
      fail("{}: ByteLevel pre_tokenizer with add_prefix_space=true is not supported", where);
    }
    if (j.value("use_regex", true)) {
      PreTokStep st{PreTokStep::ByteLevelRegex};
      st.regex = std::make_shared<Regex>(kGpt2Regex);
      t.pretok.push_back(std::move(st));
    }
  } else if (type == "BertPreTokenizer") {
    t.pretok.push_back({PreTokStep::Bert});
  } else if (type == "Whitespace") {
    PreTokStep st{PreTokStep::Whitespace};
    st.regex = std::make_shared<Regex>(R"(\w+|[^\w\s]+)");
    t.pretok.push_back(std::move(st));
  } else if (type == "WhitespaceSplit") {
    t.pretok.push_back({PreTokStep::WhitespaceSplit});
  } else if (type == "Digits") {
    PreTokStep st{PreTokStep::Digits};
    st.individual_digits = j.value("individual_digits", false);
    t.pretok.push_back(std::move(st));
  } else if (type == "Metaspace") {
    PreTokStep st{PreTokStep::Metaspace};
    st.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    const std::string scheme = j.contains("prepend_scheme")
                                   ? j["prepend_scheme"].get<std::string>()
                                   : (j.value("add_prefix_space", true) ? "always" : "never");
    st.prepend_scheme = scheme == "always" ? 0 : scheme == "first" ? 1 : 2;
    st.metaspace_split = j.value("split", true);
    t.pretok.push_back(std::move(st));
  } else {
    fail(
        "{}: pre_tokenizer type '{}' is not supported (supported: Sequence, Split, ByteLevel, "
        "BertPreTokenizer, Whitespace, WhitespaceSplit, Digits, Metaspace)",
        where, type);
  }
}

int32_t id_of(const TokenizerImpl& t, const std::string& s, const std::string& where) {
  const int32_t id = t.find(s);
  if (id < 0) fail("{}: token '{}' is not in the vocabulary", where, s);
  return id;
}

// Post-processor: ids before / after the sequence for a single input.
void parse_post(const json& j, TokenizerImpl& t, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " post_processor");
  if (type == "Sequence") {
    for (const auto& p : j.at("processors")) parse_post(p, t, where);
  } else if (type == "ByteLevel") {
    // offsets only
  } else if (type == "TemplateProcessing") {
    bool seen_seq = false;
    const json& specials = j.contains("special_tokens") ? j["special_tokens"] : json::object();
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        seen_seq = true;
        continue;
      }
      const std::string name = item.at("SpecialToken").at("id").get<std::string>();
      std::vector<int32_t> ids;
      if (specials.contains(name)) {
        for (const auto& v : specials[name].at("ids")) ids.push_back(v.get<int32_t>());
      } else {
        ids.push_back(id_of(t, name, where + " TemplateProcessing"));
      }
      auto& dst = seen_seq ? t.suffix_ids : t.prefix_ids;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    t.prefix_ids.push_back(j.at("cls").at(1).get<int32_t>());
    t.suffix_ids.push_back(j.at("sep").at(1).get<int32_t>());
  } else {
    fail("{}: post_processor type '{}' is not supported", where, type);
  }
}

void parse_decoder(const json& j, TokenizerImpl& t, const std::string& where) {
  using PM = TokenizerImpl::PieceMode;
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " decoder");
  if (type == "Sequence") {
    for (const auto& d : j.at("decoders")) parse_decoder(d, t, where);
  } else if (type == "ByteLevel") {
    t.piece_mode = PM::ByteLevel;
  } else if (type == "Replace") {
    const json& p = j.at("pattern");
    if (!p.contains("String") || p["String"] != "\xE2\x96\x81" || j.value("content", "") != " ") {
      fail("{}: Replace decoder other than '\xE2\x96\x81' -> ' ' is not supported", where);
    }
    t.piece_mode = PM::Spm;
  } else if (type == "ByteFallback" || type == "Fuse") {
    // byte tokens are decoded by piece_mode Spm; fusing is implicit
  } else if (type == "Strip") {
    if (j.value("content", " ") != " " || j.value("stop", 0) != 0 || j.value("start", 0) > 1) {
      fail("{}: Strip decoder other than one leading space is not supported", where);
    }
    t.strip_first_space = j.value("start", 0) == 1;
  } else if (type == "Metaspace") {
    t.piece_mode = PM::Spm;
    const std::string scheme = j.contains("prepend_scheme")
                                   ? j["prepend_scheme"].get<std::string>()
                                   : (j.value("add_prefix_space", true) ? "always" : "never");
    t.strip_first_space = scheme != "never";
  } else if (type == "WordPiece") {
    t.piece_mode = PM::Raw;
    t.wp_decoder = true;
    t.wp_prefix = j.value("prefix", std::string("##"));
    t.wp_decoder_cleanup = j.value("cleanup", true);
  } else {
    fail("{}: decoder type '{}' is not supported", where, type);
  }
}

std::vector<CleanupPass> hf_cleanup() {
  // transformers' clean_up_tokenization: sequential str.replace calls.
  std::vector<CleanupPass> v;
  for (auto [a, b] : std::initializer_list<std::pair<const char*, const char*>>{{" .", "."},
                                                                                {" ?", "?"},
                                                                                {" !", "!"},
                                                                                {" ,", ","},
                                                                                {" ' ", "'"},
                                                                                {" n't", "n't"},
                                                                                {" 'm", "'m"},
                                                                                {" 's", "'s"},
                                                                                {" 've", "'ve"},
                                                                                {" 're", "'re"}}) {
    v.push_back({{{a, b}}});
  }
  return v;
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

}  // namespace

namespace {

// `stage` names the file and field being read, for the message of a JSON type error.
std::unique_ptr<TokenizerImpl> load_hf_dir_impl(const std::string& dir, std::string& tj_path,
                                                std::string& stage) {
  namespace fs = std::filesystem;
  tj_path = (fs::path(dir) / "tokenizer.json").string();
  json cfg = json::object();
  const std::string cfg_path = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(cfg_path)) cfg = parse_json(cfg_path);
  json tj;
  if (fs::exists(tj_path)) {
    tj = parse_json(tj_path);
  } else if (fs::exists(fs::path(dir) / "vocab.txt")) {
    tj_path = (fs::path(dir) / "vocab.txt").string();
    tj = bert_vocab_txt(tj_path, cfg);
  } else {
    fail("{}: tokenizer.json not found", dir);
  }

  auto t = std::make_unique<TokenizerImpl>();
  t->sem = Semantics::HF;
  t->add_space_prefix = false;
  t->piece_mode = TokenizerImpl::PieceMode::Raw;

  if (!tj.contains("model") || !tj["model"].is_object()) fail("{}: 'model' missing", tj_path);
  const json& model = tj["model"];
  std::string mtype = model.value("type", "");
  if (mtype.empty())
    mtype = model.contains("merges") ? "BPE" : model.contains("continuing_subword_prefix") ? "WordPiece" : "";
  if (mtype == "BPE") {
    t->algo = Algo::Bpe;
  } else if (mtype == "WordPiece") {
    t->algo = Algo::WordPiece;
  } else {
    fail("{}: model type '{}' is not supported (expected BPE or WordPiece)", tj_path, mtype);
  }

  // Vocabulary (model vocab + added tokens). Ids are checked before anything is sized by them:
  // gaps are allowed (they become unassigned tokens) but not more unassigned ids than entries.
  stage = "model.vocab";
  const json& vocab = model.at("vocab");
  if (!vocab.is_object()) fail("{}: model.vocab is not an object", tj_path);
  const json added = tj.value("added_tokens", json::array());
  if (!added.is_array()) fail("{}: added_tokens is not a list", tj_path);
  const size_t n_entries = vocab.size() + added.size();
  const int64_t max_id = 2 * static_cast<int64_t>(n_entries) + 1024;
  auto check_id = [&](const json& v, const std::string& what) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= max_id)
      fail("{}: {} has id {}, expected an integer in [0, {}) for a vocabulary of {} entries", tj_path, what,
           v.dump(), max_id, n_entries);
    return static_cast<size_t>(v.get<int64_t>());
  };
  size_t n = 0;
  for (const auto& [k, v] : vocab.items())
    n = std::max(n, check_id(v, fmt::format("model.vocab['{}']", k)) + 1);
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string())
      fail("{}: added_tokens[{}] needs an integer 'id' and a string 'content'", tj_path, i);
    n = std::max(n, check_id(a["id"], fmt::format("added_tokens[{}]", i)) + 1);
  }
  t->text.assign(n, std::string());
  t->type.assign(n, TokenType::Normal);
  std::vector<uint8_t> filled(n, 0);
  for (const auto& [k, v] : vocab.items()) {
    const auto id = static_cast<size_t>(v.get<int64_t>());
    t->text[id] = k;
    filled[id] = 1;
  }
  stage = "added_tokens";
  for (const auto& a : added) {
    const auto id = static_cast<int32_t>(a["id"].get<int64_t>());
    t->text[id] = a["content"].get<std::string>();
    filled[id] = 1;
    const bool special = a.value("special", false);
    t->type[id] = special ? TokenType::Control : TokenType::UserDefined;
    AddedToken at{id, special};
    at.lstrip = a.value("lstrip", false);
    at.rstrip = a.value("rstrip", false);
    t->added.push_back(at);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!filled[i]) {
      t->text[i] = "[ferrum:unassigned_" + std::to_string(i) + "]";
      t->type[i] = TokenType::Unused;
    }
  }

  const std::string where = tj_path;
  stage = "normalizer";
  if (tj.contains("normalizer")) parse_normalizer(tj["normalizer"], t->normalizers, where);
  stage = "pre_tokenizer";
  if (tj.contains("pre_tokenizer")) parse_pretok(tj["pre_tokenizer"], *t, where);
  stage = "decoder";
  if (tj.contains("decoder")) parse_decoder(tj["decoder"], *t, where);
  stage = "model";

  auto opt_str = [&](const char* key) -> std::string {
    return model.contains(key) && model[key].is_string() ? model[key].get<std::string>() : "";
  };
  if (t->algo == Algo::Bpe) {
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0) {
      fail("{}: BPE dropout is not supported", where);
    }
    if (!opt_str("continuing_subword_prefix").empty() || !opt_str("end_of_word_suffix").empty()) {
      fail("{}: BPE continuing_subword_prefix/end_of_word_suffix are not supported", where);
    }
    t->byte_fallback = model.value("byte_fallback", false);
    t->fuse_unk = model.value("fuse_unk", false);
    t->ignore_merges = model.value("ignore_merges", false);
  } else {
    t->wp_prefix = model.value("continuing_subword_prefix", std::string("##"));
    t->wp_max_chars = model.value("max_input_chars_per_word", size_t(100));
  }
  if (t->algo == Algo::Bpe && t->byte_level) t->piece_mode = TokenizerImpl::PieceMode::ByteLevel;
  // Byte-fallback tokens are typed Byte so they render as bytes.
  if (t->byte_fallback) {
    for (size_t i = 0; i < n; ++i) {
      const std::string& s = t->text[i];
      if (t->type[i] == TokenType::Normal && s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>') {
        t->type[i] = TokenType::Byte;
      }
    }
  }

  // Special tokens from tokenizer_config.json / generation_config.json.
  stage = "special tokens (tokenizer_config.json)";
  auto cfg_token = [&](const char* key) -> int32_t {
    if (!cfg.contains(key)) return -1;
    const std::string s = token_string(cfg[key]);
    if (s.empty()) return -1;
    int32_t id = -1;
    for (size_t i = 0; i < n && id < 0; ++i) {
      if (t->text[i] == s) id = static_cast<int32_t>(i);
    }
    return id;
  };
  t->bos = cfg_token("bos_token");
  t->eos = cfg_token("eos_token");
  t->pad = cfg_token("pad_token");
  if (t->algo == Algo::WordPiece) {
    const int32_t cls = cfg_token("cls_token"), sep = cfg_token("sep_token");
    if (t->bos < 0) t->bos = cls;
    t->sep = sep;
    if (t->eos < 0) t->eos = sep;
  }
  std::string unk = opt_str("unk_token");
  // WordPiece maps every unknown word to its unknown token (HF's default "[UNK]"): it must exist.
  if (unk.empty() && t->algo == Algo::WordPiece) unk = "[UNK]";
  if (!unk.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (t->text[i] == unk) {
        t->unk = static_cast<int32_t>(i);
        break;
      }
    }
    if (t->unk < 0) fail("{}: unk_token '{}' is not in the vocabulary", where, unk);
  }
  const std::string gen_path = (fs::path(dir) / "generation_config.json").string();
  if (fs::exists(gen_path)) {
    stage = "generation_config.json eos_token_id";
    const json gen = parse_json(gen_path);
    if (gen.contains("eos_token_id")) {
      const json& e = gen["eos_token_id"];
      std::vector<int64_t> ids;
      if (e.is_number_integer()) ids.push_back(e.get<int64_t>());
      if (e.is_array()) {
        for (const auto& v : e) ids.push_back(v.get<int64_t>());
      }
      for (int64_t id : ids) {
        if (id < 0 || id >= static_cast<int64_t>(n)) fail("{}: eos_token_id {} out of range", gen_path, id);
        t->eog.push_back(static_cast<int32_t>(id));
      }
      if (t->eos < 0 && !ids.empty()) t->eos = static_cast<int32_t>(ids[0]);
    }
  }

  // Chat template: tokenizer_config.json, else chat_template.jinja.
  stage = "chat_template (tokenizer_config.json)";
  if (cfg.contains("chat_template")) {
    const json& ct = cfg["chat_template"];
    if (ct.is_string()) {
      t->chat_template = ct.get<std::string>();
    } else if (ct.is_array()) {
      for (const auto& e : ct) {
        if (e.value("name", "") == "default") t->chat_template = e.value("template", "");
      }
    }
  }
  const std::string jinja_path = (fs::path(dir) / "chat_template.jinja").string();
  if (t->chat_template.empty() && fs::exists(jinja_path)) t->chat_template = read_file(jinja_path);

  if (cfg.value("clean_up_tokenization_spaces", false)) t->cleanup = hf_cleanup();

  t->finalize();

  stage = "post_processor";
  if (tj.contains("post_processor")) parse_post(tj["post_processor"], *t, where);
  // transformers' Llama/Gemma tokenizers rebuild the template from add_bos_token/add_eos_token.
  const std::string cls = cfg.value("tokenizer_class", "");
  if ((cls.rfind("LlamaTokenizer", 0) == 0 || cls.rfind("CodeLlamaTokenizer", 0) == 0 ||
       cls.rfind("GemmaTokenizer", 0) == 0) &&
      (cfg.contains("add_bos_token") || cfg.contains("add_eos_token"))) {
    t->prefix_ids.clear();
    t->suffix_ids.clear();
    if (cfg.value("add_bos_token", true) && t->bos >= 0) t->prefix_ids.push_back(t->bos);
    if (cfg.value("add_eos_token", false) && t->eos >= 0) t->suffix_ids.push_back(t->eos);
  }
  for (int32_t id : t->prefix_ids) t->check_id(id, "post_processor");
  for (int32_t id : t->suffix_ids) t->check_id(id, "post_processor");

  // Merges: "a b" strings or ["a", "b"] pairs; rank = position.
  stage = "model.merges";
  if (t->algo == Algo::Bpe && model.contains("merges")) {
    const json& merges = model["merges"];
    t->merges.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
      const json& m = merges[r];
      std::string a, b;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) fail("{}: merges[{}] '{}' has no space", where, r, s);
        a = s.substr(0, sp), b = s.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2) {
        a = m[0].get<std::string>(), b = m[1].get<std::string>();
      } else {
        fail("{}: merges[{}] is neither \"a b\" nor [\"a\", \"b\"]", where, r);
      }
      const int32_t ia = t->find(a), ib = t->find(b), ic = t->find(a + b);
      if (ia < 0 || ib < 0 || ic < 0) {
        fail("{}: merges[{}] ('{}', '{}') refers to a token missing from the vocabulary", where, r, a, b);
      }
      t->merges.emplace((uint64_t(uint32_t(ia)) << 32) | uint32_t(ib), std::make_pair(int32_t(r), ic));
    }
  }
  return t;
}

}  // namespace

std::unique_ptr<TokenizerImpl> load_hf_dir(const std::string& dir) {
  std::string tj_path, stage = "model";
  try {
    return load_hf_dir_impl(dir, tj_path, stage);
  } catch (const json::exception& e) {
    // A field of an unexpected JSON type (or a missing one read with at()).
    fail("{}: {}: {}", tj_path, stage, e.what());
  }
}

}  // namespace ferrum::tok
