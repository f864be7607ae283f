// Internal state shared by the tokenizer loaders (GGUF, tokenizer.json, llama2.c) and the
// algorithms (SentencePiece-style merges, BPE, WordPiece).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ferrum/tokenizer.h"
#include "tokenizer/flat_map.h"
#include "tokenizer/regex.h"

namespace ferrum {

namespace tok {

using StrMap = FlatStrMap<int32_t>;

enum class Algo { Spm, Bpe, WordPiece };
// Whose behaviour to reproduce where llama.cpp and HF tokenizers legitimately differ.
enum class Semantics { LlamaCpp, HF };

struct NormStep {
  enum Kind { Prepend, Replace, NFC, NFD, Lowercase, StripAccents, Bert } kind;
  NormStep(Kind k) : kind(k) {}  // NOLINT: implicit for brace-init
  std::string a, b;              // Prepend: a; Replace: a -> b
  bool clean_text = true, chinese = true, strip_accents = true, lowercase = true;  // Bert
};

struct PreTokStep {
  enum Kind { Split, ByteLevelRegex, Metaspace, Bert, Whitespace, WhitespaceSplit, Digits } kind;
  PreTokStep(Kind k) : kind(k) {}  // NOLINT: implicit for brace-init
  std::shared_ptr<Regex> regex;    // Split / ByteLevelRegex / Whitespace
  enum Behavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous } behavior = Isolated;
  bool invert = false;
  bool individual_digits = false;
  std::string replacement;      // Metaspace
  int prepend_scheme = 0;       // Metaspace: 0 always, 1 first, 2 never
  bool metaspace_split = true;  // Metaspace
};

// One token of the tokenizer's "added"/special vocabulary that is matched in raw text.
struct AddedToken {
  int32_t id;
  bool special;  // not matched when parse_special is off
  bool lstrip = false, rstrip = false;
};

class SpecialSplitter;

// Open-addressing hash map (token pair -> (rank, merged id)) for the BPE inner loop.
class MergeMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, {0, 0});
    size_ = 0;
  }
  // Keeps the first value inserted for a key.
  void emplace(uint64_t key, std::pair<int32_t, int32_t> v) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    size_t i = slot(key);
    if (keys_[i] == key) return;
    keys_[i] = key;
    vals_[i] = v;
    ++size_;
  }
  const std::pair<int32_t, int32_t>* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    const size_t i = slot(key);
    return keys_[i] == key ? &vals_[i] : nullptr;
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  size_t slot(uint64_t key) const {
    const size_t mask = keys_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<uint64_t> k = std::move(keys_);
    std::vector<std::pair<int32_t, int32_t>> v = std::move(vals_);
    reserve(std::max<size_t>(16, k.size()));
    for (size_t i = 0; i < k.size(); ++i) {
      if (k[i] != kEmpty) emplace(k[i], v[i]);
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<std::pair<int32_t, int32_t>> vals_;
  size_t size_ = 0;
};

// Decode-time text clean-up: each pass is a set of literal replacements applied left to right
// (the passes themselves: cleanup_passes in decoder.h).
struct CleanupPass {
  std::vector<std::pair<std::string, std::string>> rules;
};

}  // namespace tok

struct TokenizerImpl {
  tok::Algo algo = tok::Algo::Spm;
  tok::Semantics sem = tok::Semantics::LlamaCpp;

  // vocabulary
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  std::vector<std::string> piece;  // bytes contributed when rendered
  std::vector<uint8_t> skippable;  // dropped by decode(skip_special) / render_special=false
  tok::StrMap to_id;               // raw vocab text -> id
  tok::StrMap bytes_to_id;         // byte-level BPE: decoded bytes -> id (for ignore_merges)

  int32_t bos = -1, eos = -1, unk = -1, sep = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_sep = false;
  std::vector<int32_t> eog;
  std::vector<uint8_t> eog_flag;
  std::string chat_template;

  // special / added tokens matched in text, longest first (llama.cpp: filled by finalize()
  // from the token types; HF: from added_tokens)
  std::vector<tok::AddedToken> added;
  bool phi3_rstrip = false;                        // llama.cpp forces RSTRIP on phi-3's special tokens
  std::shared_ptr<tok::SpecialSplitter> splitter;  // built by finalize() over `added`

  // SPM
  bool add_space_prefix = true;  // llama.cpp: " " before text at start and after specials
  bool spm_word_local = false;   // no token has "▁" after another char (see spm.cpp)
  tok::MergeMap spm_pairs;       // (token a, token b) -> (token a+b, 0)
  int32_t byte_token[256];       // <0xXX> (SPM/byte fallback) or byte-level char token; -1 none

  // BPE
  tok::MergeMap merges;  // (left,right) -> (rank, merged id)
  bool byte_level = false;
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;

  // HF pipeline (and llama.cpp BPE regexes as Split steps)
  std::vector<tok::NormStep> normalizers;
  std::vector<tok::PreTokStep> pretok;

  // WordPiece
  std::string wp_prefix = "##";
  size_t wp_max_chars = 100;
  bool wp_lowercase = true, wp_strip_accents = true;
  size_t max_token_len = 0;

  // post-processing (HF TemplateProcessing / llama.cpp BOS/EOS policy)
  std::vector<int32_t> prefix_ids, suffix_ids;

  // decoding
  enum class PieceMode { Spm, ByteLevel, Raw } piece_mode = PieceMode::Spm;
  bool strip_first_space = false;  // SPM: one leading space is dropped
  bool wp_decoder = false;         // HF WordPiece decoder: " " between words, "##" glued
  bool wp_decoder_cleanup = false;
  std::vector<tok::CleanupPass> cleanup;

  // --- helpers implemented in tokenizer.cpp / loaders ---
  int32_t find(std::string_view s) const {
    const int32_t* id = to_id.find(s);
    return id ? *id : -1;
  }
  // Fills piece/skippable/eog/added tables; call once the vocabulary and flags are set.
  void finalize();
  void check_id(int32_t id, const char* what) const;
};

namespace tok {

// Algorithms (append ids to out).
void spm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out);
void bpe_encode_word(const TokenizerImpl& t, std::string_view word, std::vector<int32_t>& out);
void wordpiece_encode_word(const TokenizerImpl& t, std::string_view word, std::vector<int32_t>& out);
// llama.cpp's WPM: normalizes and splits text into words, then phantom-space longest match.
void llamacpp_wpm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out);

// HF pipeline pieces.
std::string apply_normalizers(const std::vector<NormStep>& steps, std::string_view text, bool first_fragment);
void pre_tokenize(const std::vector<PreTokStep>& steps, std::string& buf,
                  std::vector<std::pair<size_t, size_t>>& spans, bool first_fragment);

// GPT-2 byte <-> unicode code point map.
uint32_t byte_to_cp(uint8_t b);
int cp_to_byte(uint32_t cp);  // -1 if cp is not in the map

// Standard regexes.
extern const char* const kGpt2Regex;
extern const char* const kLlama3Regex;
extern const char* const kQwen2Regex;
extern const char* const kO200kRegex;

std::unique_ptr<TokenizerImpl> load_gguf(const gguf::File& f);
std::unique_ptr<TokenizerImpl> load_hf_dir(const std::string& dir);
std::unique_ptr<TokenizerImpl> load_llama2c(const std::string& path);

}  // namespace tok

}  // namespace ferrum
