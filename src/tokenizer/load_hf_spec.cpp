// The pipeline sections of tokenizer.json (normalizer, pre_tokenizer, post_processor, decoder):
// what each supported type sets in TokenizerImpl, following HF `tokenizers` semantics.
#include "tokenizer/load_hf_spec.h"

#include "core/fail.h"

namespace ferrum::tok {

namespace {

using json = nlohmann::json;

std::string str_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) fail("{}: field '{}' missing or not a string", where, key);
  return j[key].get<std::string>();
}

std::string quote_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

PreTokStep::Behavior parse_behavior(const std::string& b, const std::string& where) {
  if (b == "Isolated") return PreTokStep::Isolated;
  if (b == "Removed") return PreTokStep::Removed;
  if (b == "MergedWithPrevious") return PreTokStep::MergedWithPrevious;
  if (b == "MergedWithNext") return PreTokStep::MergedWithNext;
  if (b == "Contiguous") return PreTokStep::Contiguous;
  fail("{}: Split behavior '{}' is unknown", where, b);
}

int32_t id_of(const TokenizerImpl& t, const std::string& s, const std::string& where) {
  const int32_t id = t.find(s);
  if (id < 0) fail("{}: token '{}' is not in the vocabulary", where, s);
  return id;
}

}  // namespace

void parse_hf_normalizer(const json& j, std::vector<NormStep>& out, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " normalizer");
  if (type == "Sequence") {
    for (const auto& n : j.at("normalizers")) parse_hf_normalizer(n, out, where);
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

void parse_hf_pre_tokenizer(const json& j, TokenizerImpl& t, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " pre_tokenizer");
  if (type == "Sequence") {
    for (const auto& p : j.at("pretokenizers")) parse_hf_pre_tokenizer(p, t, where);
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

// Post-processor: ids before / after the sequence for a single input.
void parse_hf_post_processor(const json& j, TokenizerImpl& t, const std::string& where) {
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " post_processor");
  if (type == "Sequence") {
    for (const auto& p : j.at("processors")) parse_hf_post_processor(p, t, where);
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

void parse_hf_decoder(const json& j, TokenizerImpl& t, const std::string& where) {
  using PM = TokenizerImpl::PieceMode;
  if (j.is_null()) return;
  const std::string type = str_field(j, "type", where + " decoder");
  if (type == "Sequence") {
    for (const auto& d : j.at("decoders")) parse_hf_decoder(d, t, where);
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

}  // namespace ferrum::tok
