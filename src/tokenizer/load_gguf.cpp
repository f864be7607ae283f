// Tokenizer from GGUF metadata (tokenizer.ggml.*), reproducing llama.cpp's llama-vocab.cpp
// (defaults per model and per pre-tokenizer, EOG/CONTROL retyping, phi-3 RSTRIP).
#include <algorithm>
#include <cctype>

#include "core/fail.h"
#include "formats/gguf.h"
#include "tokenizer/decoder.h"
#include "tokenizer/load_steps.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum::tok {

namespace {

// llama.cpp's BPE pre-tokenizers: the tokenizer.ggml.pre names, the regexes applied in sequence
// (each an isolated split), and what else they set.
struct BpePreTokenizer {
  std::vector<std::string_view> names;
  std::vector<const char*> regexes;
  bool llama3 = false;       // ignore_merges, BOS added
  bool clean_spaces = true;  // llama.cpp's decode clean-up
};

const std::vector<BpePreTokenizer>& bpe_pre_tokenizers() {
  static const std::vector<BpePreTokenizer> k = {
      // llama.cpp's "default" (also for an absent tokenizer.ggml.pre)
      {{"", "default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Regex, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"}, {kLlama3Regex}, /*llama3=*/true},
      {{"qwen2", "deepseek-r1-qwen"}, {kQwen2Regex}, false, /*clean_spaces=*/false},
      {{"gpt-4o", "llama4"}, {kO200kRegex}, false, /*clean_spaces=*/false},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "mellum",
        "modern-bert"},
       {kGpt2Regex}},
  };
  return k;
}

void set_bpe_pre_tokenizer(const gguf::File& f, const std::string& pre, TokenizerImpl& t,
                           bool& clean_spaces) {
  for (const BpePreTokenizer& p : bpe_pre_tokenizers()) {
    if (std::find(p.names.begin(), p.names.end(), pre) == p.names.end()) continue;
    for (const char* re : p.regexes) {
      PreTokStep st{PreTokStep::Split};
      st.regex = std::make_shared<Regex>(re);
      st.behavior = PreTokStep::Isolated;
      t.pretok.push_back(std::move(st));
    }
    if (p.llama3) t.ignore_merges = true, t.add_bos = true;
    clean_spaces = p.clean_spaces;
    return;
  }
  fail(
      "{}: tokenizer.ggml.pre '{}' is not supported (supported: llama-bpe/llama3, qwen2, gpt-4o, gpt-2, "
      "default)",
      f.path(), pre);
}

// The model kind (tokenizer.ggml.model) and llama.cpp's defaults for it; returns whether decoding
// cleans spaces up.
bool set_model_defaults(const gguf::File& f, TokenizerImpl& t) {
  const std::string model = f.get_string("tokenizer.ggml.model");
  // Read (and type-checked) whatever the model, as llama.cpp does.
  const std::string pre = f.find_string("tokenizer.ggml.pre").value_or("");
  bool clean_spaces = false;
  if (model == "llama") {
    set_llamacpp_spm_defaults(t);
  } else if (model == "gpt2") {
    t.algo = Algo::Bpe;
    // llama.cpp defaults BOS/EOS to id 11 when the keys are absent (',' in Qwen's vocabulary,
    // which would then end generation); ferrum reports "none" instead.
    t.bos = -1, t.eos = -1;
    t.add_space_prefix = false;
    t.byte_level = true;
    t.piece_mode = TokenizerImpl::PieceMode::ByteLevel;
    set_bpe_pre_tokenizer(f, pre, t, clean_spaces);
  } else if (model == "bert") {
    t.algo = Algo::WordPiece;
    t.bos = 101, t.unk = 100, t.sep = 102, t.pad = 0;
    t.add_bos = true;
    t.add_sep = true;
    t.add_space_prefix = false;
    t.piece_mode = TokenizerImpl::PieceMode::Spm;
    clean_spaces = true;
  } else {
    fail("{}: tokenizer.ggml.model '{}' is not supported (expected llama, gpt2 or bert)", f.path(), model);
  }
  if (auto v = f.find_bool("tokenizer.ggml.add_space_prefix")) t.add_space_prefix = *v;
  if (t.algo == Algo::Spm) t.strip_first_space = t.add_space_prefix;
  return clean_spaces;
}

// Token texts, scores and types.
void read_vocab(const gguf::File& f, TokenizerImpl& t) {
  t.text = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = t.text.size();
  for (size_t i = 0; i < n; ++i) {
    if (t.text[i].empty()) t.text[i] = "[EMPTY_" + std::to_string(i) + "]";
  }
  if (f.has("tokenizer.ggml.scores")) {
    const auto et = f.array_type_of("tokenizer.ggml.scores");
    if (et == gguf::ValueType::F32 || et == gguf::ValueType::F64) {
      t.score = f.get_float_array("tokenizer.ggml.scores");
    } else {
      for (int64_t v : f.get_int_array("tokenizer.ggml.scores")) t.score.push_back(float(v));
    }
    if (t.score.size() < n) {
      fail("{}: tokenizer.ggml.scores has {} entries, expected {}", f.path(), t.score.size(), n);
    }
    t.score.resize(n);
  }
  t.type.assign(n, TokenType::Normal);
  if (f.has("tokenizer.ggml.token_type")) {
    const auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() < n) {
      fail("{}: tokenizer.ggml.token_type has {} entries, expected {}", f.path(), types.size(), n);
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = types[i];
      t.type[i] = v >= 1 && v <= 6 ? static_cast<TokenType>(v) : TokenType::Undefined;
    }
  }
}

// Special ids: out-of-range values are ignored as llama.cpp does (it only warns).
void read_special_ids(const gguf::File& f, TokenizerImpl& t) {
  const size_t n = t.text.size();
  auto read_id = [&](const char* key, int32_t& id) {
    if (id >= static_cast<int32_t>(n)) id = -1;
    if (auto v = f.find_uint(key)) {
      if (*v < n) id = static_cast<int32_t>(*v);
    }
  };
  read_id("tokenizer.ggml.bos_token_id", t.bos);
  read_id("tokenizer.ggml.eos_token_id", t.eos);
  read_id("tokenizer.ggml.unknown_token_id", t.unk);
  read_id("tokenizer.ggml.seperator_token_id", t.sep);
  read_id("tokenizer.ggml.padding_token_id", t.pad);
  if (t.algo == Algo::WordPiece && t.unk < 0)  // every unknown word becomes the unknown token
    fail(
        "{}: tokenizer.ggml.unknown_token_id is missing or out of range (vocabulary of {}), but a WordPiece "
        "vocabulary needs an unknown token",
        f.path(), n);
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    int32_t id = -1;
    read_id(key, id);
    if (id >= 0) t.eog.push_back(id);
  }
}

// BOS/EOS/SEP flags, the WordPiece normalizer flags, the chat template and phi-3's RSTRIP.
void read_options(const gguf::File& f, TokenizerImpl& t) {
  if (auto v = f.find_bool("tokenizer.ggml.add_bos_token")) t.add_bos = *v;
  if (auto v = f.find_bool("tokenizer.ggml.add_eos_token")) t.add_eos = *v;
  if (auto v = f.find_bool("tokenizer.ggml.add_sep_token")) t.add_sep = *v;
  if (t.algo == Algo::WordPiece) {
    if (auto v = f.find_bool("tokenizer.ggml.normalizer.lowercase")) t.wp_lowercase = *v;
    t.wp_strip_accents = t.wp_lowercase;
    if (auto v = f.find_bool("tokenizer.ggml.normalizer.strip_accents")) t.wp_strip_accents = *v;
  }
  if (auto v = f.find_string("tokenizer.chat_template")) t.chat_template = *v;

  std::string name = f.find_string("general.name").value_or("");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  t.phi3_rstrip = name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
}

// BPE merges ("a b", rank = position); merges of tokens not in the vocabulary are skipped (llama.cpp
// would never produce them).
void read_merges(const gguf::File& f, TokenizerImpl& t) {
  const auto merges = f.get_string_array_views("tokenizer.ggml.merges");
  t.merges.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    std::string_view a, b;
    if (!split_merge(merges[r], a, b)) {
      fail("{}: tokenizer.ggml.merges[{}] = '{}' has no space separating the pair", f.path(), r, merges[r]);
    }
    add_merge(t, a, b, static_cast<int32_t>(r));
  }
}

}  // namespace

std::unique_ptr<TokenizerImpl> load_gguf(const gguf::File& f) {
  auto t = std::make_unique<TokenizerImpl>();
  t->sem = Semantics::LlamaCpp;
  const bool clean_spaces = set_model_defaults(f, *t);
  read_vocab(f, *t);
  read_special_ids(f, *t);
  read_options(f, *t);
  if (clean_spaces) t->cleanup = cleanup_passes(Cleanup::LlamaCpp);
  t->finalize();
  if (t->algo == Algo::Bpe) read_merges(f, *t);
  return t;
}

}  // namespace ferrum::tok
