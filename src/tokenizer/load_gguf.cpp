// Tokenizer from GGUF metadata (tokenizer.ggml.*), reproducing llama.cpp's llama-vocab.cpp
// (defaults per model and per pre-tokenizer, EOG/CONTROL retyping, phi-3 RSTRIP).
#include "core/fail.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

void add_regex_step(TokenizerImpl& t, const char* pattern) {
  PreTokStep st{PreTokStep::Split};
  st.regex = std::make_shared<Regex>(pattern);
  st.behavior = PreTokStep::Isolated;
  t.pretok.push_back(std::move(st));
}

// llama.cpp cleans " ?", " 's", ... for BPE vocabularies that set clean_spaces.
std::vector<CleanupPass> llamacpp_cleanup() {
  return {
      {{{" ?", "?"}, {" !", "!"}, {" .", "."}, {" ,", ","}}},
      {{{" ' ", "'"}}},
      {{{" 's", "'s"}, {" 'm", "'m"}, {" 're", "'re"}, {" 've", "'ve"}}},
  };
}

}  // namespace

std::unique_ptr<TokenizerImpl> load_gguf(const gguf::File& f) {
  auto t = std::make_unique<TokenizerImpl>();
  t->sem = Semantics::LlamaCpp;
  const std::string& path = f.path();
  const std::string model = f.get_string("tokenizer.ggml.model");
  const std::string pre = f.find_string("tokenizer.ggml.pre").value_or("");

  bool clean_spaces = false;
  if (model == "llama") {
    t->algo = Algo::Spm;
    t->bos = 1, t->eos = 2, t->unk = 0;
    t->add_space_prefix = true;
    t->add_bos = true;
    t->strip_first_space = true;
    t->piece_mode = TokenizerImpl::PieceMode::Spm;
  } else if (model == "gpt2") {
    t->algo = Algo::Bpe;
    // llama.cpp defaults BOS/EOS to id 11 when the keys are absent (',' in Qwen's vocabulary,
    // which would then end generation); ferrum reports "none" instead.
    t->bos = -1, t->eos = -1;
    t->add_space_prefix = false;
    t->byte_level = true;
    t->piece_mode = TokenizerImpl::PieceMode::ByteLevel;
    clean_spaces = true;
    if (pre.empty() || pre == "default") {
      // llama.cpp's "default" pre-tokenizer: these regexes in sequence.
      add_regex_step(*t, R"([\p{P}\$\+<=>\^~\|]+)");
      add_regex_step(*t, kGpt2Regex);
      add_regex_step(*t, R"(\p{N}+)");
      add_regex_step(*t, "[0-9][0-9][0-9]");
    } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" ||
               pre == "pixtral") {
      add_regex_step(*t, kLlama3Regex);
      t->ignore_merges = true;
      t->add_bos = true;
    } else if (pre == "qwen2" || pre == "deepseek-r1-qwen") {
      add_regex_step(*t, kQwen2Regex);
      clean_spaces = false;
    } else if (pre == "gpt-2" || pre == "phi-2" || pre == "jina-es" || pre == "jina-de" ||
               pre == "gigachat" || pre == "jina-v2-es" || pre == "jina-v2-de" || pre == "mellum" ||
               pre == "modern-bert") {
      add_regex_step(*t, kGpt2Regex);
    } else {
      fail(
          "{}: tokenizer.ggml.pre '{}' is not supported (supported: llama-bpe/llama3, qwen2, "
          "gpt-2, default)",
          path, pre);
    }
  } else if (model == "bert") {
    t->algo = Algo::WordPiece;
    t->bos = 101, t->unk = 100, t->sep = 102, t->pad = 0;
    t->add_bos = true;
    t->add_sep = true;
    t->add_space_prefix = false;
    t->piece_mode = TokenizerImpl::PieceMode::Spm;
    clean_spaces = true;
  } else {
    fail("{}: tokenizer.ggml.model '{}' is not supported (expected llama, gpt2 or bert)", path, model);
  }
  if (auto v = f.find_bool("tokenizer.ggml.add_space_prefix")) t->add_space_prefix = *v;
  if (t->algo == Algo::Spm) t->strip_first_space = t->add_space_prefix;

  t->text = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = t->text.size();
  for (size_t i = 0; i < n; ++i) {
    if (t->text[i].empty()) t->text[i] = "[EMPTY_" + std::to_string(i) + "]";
  }
  if (f.has("tokenizer.ggml.scores")) {
    const auto et = f.array_type_of("tokenizer.ggml.scores");
    if (et == gguf::ValueType::F32 || et == gguf::ValueType::F64) {
      t->score = f.get_float_array("tokenizer.ggml.scores");
    } else {
      for (int64_t v : f.get_int_array("tokenizer.ggml.scores")) t->score.push_back(float(v));
    }
    if (t->score.size() < n) {
      fail("{}: tokenizer.ggml.scores has {} entries, expected {}", path, t->score.size(), n);
    }
    t->score.resize(n);
  }
  t->type.assign(n, TokenType::Normal);
  if (f.has("tokenizer.ggml.token_type")) {
    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() < n) {
      fail("{}: tokenizer.ggml.token_type has {} entries, expected {}", path, types.size(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = types[i];
      t->type[i] = v >= 1 && v <= 6 ? static_cast<TokenType>(v) : TokenType::Undefined;
    }
  }

  // Special ids: out-of-range values are ignored as llama.cpp does (it only warns).
  auto read_id = [&](const char* key, int32_t& id) {
    if (id >= static_cast<int32_t>(n)) id = -1;
    if (auto v = f.find_uint(key)) {
      if (*v < n) id = static_cast<int32_t>(*v);
    }
  };
  read_id("tokenizer.ggml.bos_token_id", t->bos);
  read_id("tokenizer.ggml.eos_token_id", t->eos);
  read_id("tokenizer.ggml.unknown_token_id", t->unk);
  read_id("tokenizer.ggml.seperator_token_id", t->sep);
  read_id("tokenizer.ggml.padding_token_id", t->pad);
  if (t->algo == Algo::WordPiece && t->unk < 0)  // every unknown word becomes the unknown token
    fail(
        "{}: tokenizer.ggml.unknown_token_id is missing or out of range (vocabulary of {}), but a WordPiece "
        "vocabulary needs an unknown token",
        path, n);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    int32_t id = -1;
    read_id(key, id);
    if (id >= 0) t->eog.push_back(id);
  }
  if (auto v = f.find_bool("tokenizer.ggml.add_bos_token")) t->add_bos = *v;
  if (auto v = f.find_bool("tokenizer.ggml.add_eos_token")) t->add_eos = *v;
  if (auto v = f.find_bool("tokenizer.ggml.add_sep_token")) t->add_sep = *v;
  if (t->algo == Algo::WordPiece) {
    if (auto v = f.find_bool("tokenizer.ggml.normalizer.lowercase")) t->wp_lowercase = *v;
    t->wp_strip_accents = t->wp_lowercase;
    if (auto v = f.find_bool("tokenizer.ggml.normalizer.strip_accents")) t->wp_strip_accents = *v;
  }
  if (auto v = f.find_string("tokenizer.chat_template")) t->chat_template = *v;
  if (clean_spaces) t->cleanup = llamacpp_cleanup();

  std::string name = f.find_string("general.name").value_or("");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t->phi3_rstrip = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;

  t->finalize();

  if (t->algo == Algo::Bpe) {
    const auto merges = f.get_string_array_views("tokenizer.ggml.merges");
    t->merges.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
      const std::string_view m = merges[r];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string_view::npos) {
        fail("{}: tokenizer.ggml.merges[{}] = '{}' has no space separating the pair", path, r, m);
      }
      const int32_t a = t->find(m.substr(0, sp)), b = t->find(m.substr(sp + 1));
      std::string joined(m.substr(0, sp));
      joined.append(m.substr(sp + 1));
      const int32_t c = t->find(joined);
      if (a < 0 || b < 0 || c < 0) continue;  // llama.cpp would never produce such a merge
      t->merges.emplace((uint64_t(uint32_t(a)) << 32) | uint32_t(b), std::make_pair(int32_t(r), c));
    }
  }
  return t;
}

}  // namespace ferrum::tok
