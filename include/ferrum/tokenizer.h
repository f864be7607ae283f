// Tokenizers: SentencePiece-style (score-driven merges, byte fallback), byte-level BPE and
// WordPiece, loaded from GGUF metadata (llama.cpp semantics), a Hugging Face tokenizer.json
// directory (HF `tokenizers` semantics) or a llama2.c tokenizer.bin.
//
// Input text must be valid UTF-8: encode() throws ferrum::Error naming the byte offset otherwise
// (HF tokenizers only accept Rust strings; llama.cpp would silently mangle such input).
// decode()/token_to_piece() return raw bytes: a byte-fallback or byte-level token may hold part
// of a UTF-8 character, so a piece is not always valid UTF-8 on its own (use StreamDecoder).
//
// Where llama.cpp and HF differ (NFC for Qwen, BERT accent/mark stripping and the 100-char word
// limit, BOS policy, EOG/CONTROL retyping of "</s>" etc.), from_gguf follows llama.cpp and
// from_hf_dir follows HF. Deliberate deviations: GGUF "gpt2" vocabularies without bos/eos keys
// report -1 (llama.cpp uses id 11); tokenizer.json added tokens are matched in the raw text
// (their `normalized` and `single_word` flags are not used); BERT clean_text keeps unassigned
// code points (Cn), as tokenizers.js and llama.cpp do.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum {

namespace gguf {
class File;
}

enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6
};

struct TokenizerImpl;
namespace tok {
class DecodeState;
}

class Tokenizer {
 public:
  virtual ~Tokenizer();

  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);  // tokenizer.ggml.* keys
  // tokenizer.json + tokenizer_config.json (+ generation_config.json for eos, chat_template.jinja)
  static std::unique_ptr<Tokenizer> from_hf_dir(const std::string& dir);
  static std::unique_ptr<Tokenizer> from_llama2c(const std::string& tokenizer_bin);

  // add_special: BOS/EOS or [CLS]/[SEP] per the model's policy.
  // parse_special: the text of special/control tokens is matched as one token. Tokens that are
  // matched regardless (llama.cpp USER_DEFINED, HF added tokens with special=false) always are.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // A byte range [begin, end) of a text.
  struct TextSpan {
    size_t begin, end;
  };
  // encode(text, add_special, /*parse_special=*/true), except that no special token is matched
  // over a byte of a `literal` span (sorted, disjoint): text from an untrusted user inside a
  // prompt whose other parts are trusted (a rendered chat template).
  std::vector<int32_t> encode_with_literal(std::string_view text, bool add_special,
                                           const std::vector<TextSpan>& literal) const;
  // Special tokens (those only matched with parse_special) that encode(text, _, true) would
  // match: each token's own bytes and id, in text order.
  struct SpecialMatch {
    size_t begin, end;
    int32_t id;
  };
  std::vector<SpecialMatch> find_special(std::string_view text) const;
  // Concatenated pieces with the model's decoder rules (leading-space strip for SentencePiece,
  // clean_up_tokenization_spaces where configured). skip_special drops control/special tokens.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Same with the model's clean_up_tokenization_spaces switched on/off explicitly.
  std::string decode(std::span<const int32_t> ids, bool skip_special, bool clean_up_spaces) const;
  // Bytes this token contributes (no leading-space strip, no clean-up). render_special=false
  // gives "" for control/special tokens.
  std::string token_to_piece(int32_t id, bool render_special = true) const;
  const std::string& token_text(int32_t id) const;  // raw vocab entry
  int32_t n_vocab() const;
  int32_t bos_id() const;  // -1 if none
  int32_t eos_id() const;  // -1 if none
  bool add_bos() const;
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;
  TokenType token_type(int32_t id) const;
  const std::string& chat_template() const;  // "" if none
  std::string bos_text() const;              // "" if no BOS
  std::string eos_text() const;              // "" if no EOS
  std::string kind() const;                  // "spm", "bpe", "wordpiece"

  const TokenizerImpl& impl() const { return *impl_; }

  explicit Tokenizer(std::unique_ptr<TokenizerImpl> impl);

 private:
  std::vector<int32_t> encode_impl(std::string_view text, bool add_special, bool parse_special,
                                   const std::vector<TextSpan>& literal) const;
  std::unique_ptr<TokenizerImpl> impl_;
};

// Streaming detokenization: push() returns the text that became final with this token. It never
// emits a partial UTF-8 character (incomplete sequences are held back until completed; bytes
// that can never complete are flushed as they are), and applies the same leading-space rule and
// clean-up as Tokenizer::decode, so the concatenation of push()es and flush() equals decode().
//
// at_text_start: the first pushed token starts the text (SentencePiece drops its leading space,
// WordPiece puts no space before it). Pass false when the stream continues earlier text, e.g.
// generated tokens after a prompt, so that " there" keeps its space.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false, bool at_text_start = true);
  ~StreamDecoder();
  std::string push(int32_t id);
  std::string flush();  // everything still held back; the decoder can then be reused

 private:
  std::unique_ptr<tok::DecodeState> state_;
  std::string utf8_pending_;  // incomplete UTF-8 sequence at the end of the output
};

}  // namespace ferrum
