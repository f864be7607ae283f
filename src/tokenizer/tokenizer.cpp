#include "ferrum/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "core/fail.h"
#include "core/utf8.h"
#include "tokenizer/decoder.h"
#include "tokenizer/load_steps.h"
#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer_impl.h"

namespace ferrum {

using tok::Algo;
using tok::Semantics;

void TokenizerImpl::check_id(int32_t id, const char* what) const {
  if (id < 0 || id >= static_cast<int32_t>(text.size())) {
    fail("tokenizer {}: token id {} out of range [0, {})", what, id, text.size());
  }
}

namespace {

// llama.cpp marks these texts end-of-generation (and CONTROL) whatever the converter said
// (llama-vocab.cpp, special_eog_ids).
const char* const kEogTexts[] = {"<|eot_id|>",
                                 "<|im_end|>",
                                 "<|end|>",
                                 "<|return|>",
                                 "<|call|>",
                                 "<|flush|>",
                                 "<|calls|>",
                                 "<end_of_turn>",
                                 "<|endoftext|>",
                                 "</s>",
                                 "<|eom_id|>",
                                 "<EOT>",
                                 "_<EOT>",
                                 "[EOT]",
                                 "[EOS]",
                                 "<|end_of_text|>",
                                 "<end_of_utterance>",
                                 "<eos>",
                                 "<turn|>",
                                 "<|tool_response>",
                                 ("<\xEF\xBD\x9C"
                                  "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"),
                                 "[e~["};
// FIM texts llama.cpp retypes to CONTROL.
const char* const kFimTexts[] = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>",
                                 "<|fim_repo|>",   "<|file_sep|>",   "<|repo_name|>"};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xAB>" -> 0xAB, else -1.
int parse_byte_token(const std::string& s) {
  if (!tok::is_byte_token_text(s)) return -1;
  const int h = hex_digit(s[3]), l = hex_digit(s[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  size_t hit = s.find(from);
  if (hit == std::string::npos) return;
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t pos = 0;
  for (; hit != std::string::npos; hit = s.find(from, pos)) {
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos);
  s.swap(out);
}

// The steps of TokenizerImpl::finalize, in order.

// Scores and types sized to the vocabulary; the text -> id index (first id wins on duplicates).
void index_vocab(TokenizerImpl& t) {
  const size_t n = t.text.size();
  t.score.resize(n, 0.0f);
  t.type.resize(n, TokenType::Normal);
  t.to_id.clear();
  t.to_id.reserve(n * 2);
  t.max_token_len = 0;
  for (size_t i = 0; i < n; ++i) {
    t.to_id.emplace(t.text[i], static_cast<int32_t>(i));
    t.max_token_len = std::max(t.max_token_len, t.text[i].size());
  }
}

// SPM: whether merges stay inside "▁"-started segments (unless some token has "▁" after another
// char), and every way to write a token as the concatenation of two tokens.
void find_spm_pairs(TokenizerImpl& t) {
  t.spm_word_local = true;
  for (const std::string& s : t.text) {
    for (size_t p = s.find("\xE2\x96\x81", 1); p != std::string::npos; p = s.find("\xE2\x96\x81", p + 3)) {
      if (p < 3 || s.compare(p - 3, 3, "\xE2\x96\x81") != 0) t.spm_word_local = false;
    }
  }
  t.spm_pairs = tok::MergeMap();
  if (t.algo != Algo::Spm) return;
  const size_t n = t.text.size();
  t.spm_pairs.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view s = t.text[i];
    if (t.find(s) != static_cast<int32_t>(i)) continue;  // duplicate text
    for (size_t k = utf8::lead_len(static_cast<uint8_t>(s[0])); k < s.size();
         k += utf8::lead_len(static_cast<uint8_t>(s[k]))) {
      const int32_t a = t.find(s.substr(0, k)), b = t.find(s.substr(k));
      if (a >= 0 && b >= 0) {
        t.spm_pairs.emplace((uint64_t(uint32_t(a)) << 32) | uint32_t(b), {static_cast<int32_t>(i), 0});
      }
    }
  }
}

// End-of-generation set (and llama.cpp's retyping by text).
void mark_eog(TokenizerImpl& t) {
  const size_t n = t.text.size();
  const bool llamacpp = t.sem == Semantics::LlamaCpp;
  t.eog_flag.assign(n, 0);
  for (const char* s : kEogTexts) {
    const int32_t id = t.find(s);
    if (id < 0) continue;
    t.eog_flag[id] = 1;
    if (llamacpp) t.type[id] = TokenType::Control;
  }
  if (llamacpp) {
    for (const char* s : kFimTexts) {
      const int32_t id = t.find(s);
      if (id >= 0) t.type[id] = TokenType::Control;
    }
  }
  if (t.eos >= 0) t.eog_flag[t.eos] = 1;
  for (int32_t id : t.eog) t.eog_flag[id] = 1;
  t.eog.clear();
  for (size_t i = 0; i < n; ++i) {
    if (t.eog_flag[i]) t.eog.push_back(static_cast<int32_t>(i));
  }
}

// The token of each byte: byte-level BPE's character token, else the "<0xXX>" token.
void find_byte_tokens(TokenizerImpl& t) {
  std::fill(std::begin(t.byte_token), std::end(t.byte_token), -1);
  if (t.byte_level) {
    for (int b = 0; b < 256; ++b) {
      std::string s;
      utf8::append(s, tok::byte_to_cp(static_cast<uint8_t>(b)));
      t.byte_token[b] = t.find(s);
    }
    return;
  }
  for (size_t i = 0; i < t.text.size(); ++i) {
    const int b = parse_byte_token(t.text[i]);
    // llama.cpp's SPM byte_to_token looks the "<0xXX>" text up whatever its type.
    const bool usable = t.type[i] == TokenType::Byte || t.sem == Semantics::HF || t.algo == Algo::Spm;
    if (b >= 0 && usable && t.byte_token[b] < 0) {
      t.byte_token[b] = static_cast<int32_t>(i);
    }
  }
}

// The bytes a byte-level token's characters stand for; false if one is not in the byte map.
bool byte_level_bytes(std::string_view s, std::string& out) {
  out.clear();
  for (size_t k = 0; k < s.size();) {
    const int b = tok::cp_to_byte(utf8::next_cp(s, k));
    if (b < 0) return false;
    out.push_back(static_cast<char>(b));
  }
  return true;
}

// The bytes token i contributes when rendered (piece_mode), for a token rendered as itself.
void set_piece(TokenizerImpl& t, size_t i) {
  const std::string& s = t.text[i];
  switch (t.piece_mode) {
    case TokenizerImpl::PieceMode::Spm:
      t.piece[i] = s;
      replace_all(t.piece[i], "\xE2\x96\x81", " ");
      break;
    case TokenizerImpl::PieceMode::Raw:
      t.piece[i] = s;
      break;
    case TokenizerImpl::PieceMode::ByteLevel: {
      std::string out;
      const bool ok = byte_level_bytes(s, out);
      if (ok && t.type[i] == TokenType::Normal) t.bytes_to_id.emplace(out, static_cast<int32_t>(i));
      t.piece[i] = ok ? std::move(out) : s;
      break;
    }
  }
}

// Pieces (bytes each token contributes) and skippable flags.
void build_pieces(TokenizerImpl& t) {
  const size_t n = t.text.size();
  const bool llamacpp = t.sem == Semantics::LlamaCpp;
  t.piece.assign(n, std::string());
  t.skippable.assign(n, 0);
  t.bytes_to_id.clear();
  for (size_t i = 0; i < n; ++i) {
    const TokenType ty = t.type[i];
    t.skippable[i] = ty == TokenType::Control || ty == TokenType::Unknown;
    if (llamacpp && (ty == TokenType::Unused || ty == TokenType::Undefined)) {
      t.skippable[i] = 1;  // llama.cpp renders unsupported types as nothing
      continue;
    }
    if (ty == TokenType::Control || ty == TokenType::Unknown || (ty == TokenType::UserDefined && llamacpp)) {
      t.piece[i] = t.text[i];
      continue;
    }
    if (ty == TokenType::Byte || (!llamacpp && t.piece_mode == TokenizerImpl::PieceMode::Spm)) {
      const int b = parse_byte_token(t.text[i]);
      if (b >= 0) {
        t.piece[i] = std::string(1, static_cast<char>(b));
        continue;
      }
    }
    set_piece(t, i);
  }
}

// Added/special tokens matched in text (llama.cpp: by token type), longest first, and their
// splitter.
void build_splitter(TokenizerImpl& t) {
  if (t.sem == Semantics::LlamaCpp) {
    t.added.clear();
    for (size_t i = 0; i < t.text.size(); ++i) {
      const TokenType ty = t.type[i];
      if (ty == TokenType::Control || ty == TokenType::UserDefined || ty == TokenType::Unknown) {
        t.added.push_back({static_cast<int32_t>(i), ty != TokenType::UserDefined});
      }
    }
  }
  std::stable_sort(t.added.begin(), t.added.end(), [&](const tok::AddedToken& a, const tok::AddedToken& b) {
    return t.text[a.id].size() > t.text[b.id].size();
  });
  if (t.phi3_rstrip) {
    for (auto& a : t.added) {
      const std::string& s = t.text[a.id];
      a.rstrip = !(s == "<unk>" || s == "<s>" || s == "<|endoftext|>");
    }
  }
  t.splitter = std::make_shared<tok::SpecialSplitter>();
  t.splitter->build(t.added, t.text);
}

// BOS/EOS policy (llama.cpp); the HF loader sets prefix/suffix from the post-processor.
void set_bos_eos_policy(TokenizerImpl& t) {
  if (t.sem != Semantics::LlamaCpp) return;
  t.prefix_ids.clear();
  t.suffix_ids.clear();
  if (t.add_bos && t.bos >= 0) t.prefix_ids.push_back(t.bos);
  if (t.algo == Algo::WordPiece) {
    if (t.add_sep && t.sep >= 0) t.suffix_ids.push_back(t.sep);
  } else {
    if (t.add_eos && t.eos >= 0) t.suffix_ids.push_back(t.eos);
  }
}

}  // namespace

void TokenizerImpl::finalize() {
  if (text.empty()) fail("tokenizer: empty vocabulary");
  index_vocab(*this);
  find_spm_pairs(*this);
  mark_eog(*this);
  find_byte_tokens(*this);
  build_pieces(*this);
  build_splitter(*this);
  set_bos_eos_policy(*this);
}

namespace {

void escape_spaces(std::string& s) {
  replace_all(s, " ", "\xE2\x96\x81");
}

// Encodes the text between special tokens, one fragment at a time, with a per-call cache of BPE
// results by pre-token (words repeat a lot in real text).
class FragmentEncoder {
 public:
  explicit FragmentEncoder(const TokenizerImpl& t) : t_(t) {}
  // at_start: the fragment starts the text; after_special: it follows a special token (or the start).
  void encode(std::string_view frag, bool at_start, bool after_special, std::vector<int32_t>& out) {
    if (t_.sem == Semantics::HF) {
      buf_ = tok::apply_normalizers(t_.normalizers, frag, at_start);
      tok::pre_tokenize(t_.pretok, buf_, spans_, at_start);
      for (const auto& [b, e] : spans_) {
        const std::string_view w = std::string_view(buf_).substr(b, e - b);
        if (t_.algo == Algo::WordPiece) {
          tok::wordpiece_encode_word(t_, w, out);
        } else {
          encode_bpe_word(w, out);
        }
      }
      return;
    }
    switch (t_.algo) {
      case Algo::Spm:
        buf_.clear();
        if (t_.add_space_prefix && after_special) buf_ = " ";
        buf_.append(frag);
        escape_spaces(buf_);
        tok::spm_encode(t_, buf_, out);
        break;
      case Algo::Bpe:
        buf_.assign(frag);
        tok::pre_tokenize(t_.pretok, buf_, spans_, at_start);
        for (const auto& [b, e] : spans_) encode_bpe_word(std::string_view(buf_).substr(b, e - b), out);
        break;
      case Algo::WordPiece:
        tok::llamacpp_wpm_encode(t_, frag, out);
        break;
    }
  }

 private:
  void encode_bpe_word(std::string_view w, std::vector<int32_t>& out) {
    if (const auto* hit = cache_.find(w)) {
      out.insert(out.end(), cached_ids_.begin() + hit->first, cached_ids_.begin() + hit->first + hit->second);
      return;
    }
    const size_t start = out.size();
    tok::bpe_encode_word(t_, w, out);
    const auto off = static_cast<uint32_t>(cached_ids_.size());
    cached_ids_.insert(cached_ids_.end(), out.begin() + start, out.end());
    cache_.emplace(w, std::make_pair(off, static_cast<uint32_t>(out.size() - start)));
  }

  const TokenizerImpl& t_;
  tok::FlatStrMap<std::pair<uint32_t, uint32_t>> cache_;
  std::vector<int32_t> cached_ids_;
  std::string buf_;
  std::vector<std::pair<size_t, size_t>> spans_;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
  return std::make_unique<Tokenizer>(tok::load_gguf(f));
}
std::unique_ptr<Tokenizer> Tokenizer::from_hf_dir(const std::string& dir) {
  return std::make_unique<Tokenizer>(tok::load_hf_dir(dir));
}
std::unique_ptr<Tokenizer> Tokenizer::from_llama2c(const std::string& path) {
  return std::make_unique<Tokenizer>(tok::load_llama2c(path));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_impl(text, add_special, parse_special, {});
}

std::vector<int32_t> Tokenizer::encode_with_literal(std::string_view text, bool add_special,
                                                    const std::vector<TextSpan>& literal) const {
  for (size_t i = 0; i < literal.size(); ++i)
    if (literal[i].begin > literal[i].end || literal[i].end > text.size() ||
        (i > 0 && literal[i].begin < literal[i - 1].end))
      fail("tokenizer: literal spans must be sorted, disjoint and inside the text");
  return encode_impl(text, add_special, true, literal);
}

std::vector<Tokenizer::SpecialMatch> Tokenizer::find_special(std::string_view text) const {
  const TokenizerImpl& t = *impl_;
  std::vector<tok::Fragment> frags;
  t.splitter->split(text, /*parse_special=*/true, t.sem == Semantics::LlamaCpp, frags);
  std::vector<SpecialMatch> out;
  auto only_with_parse_special = [&](int32_t id) {
    for (const tok::AddedToken& a : t.added)
      if (a.id == id) return a.special;
    return false;
  };
  for (const tok::Fragment& f : frags) {
    if (f.id < 0 || !only_with_parse_special(f.id)) continue;
    // The fragment may include whitespace taken by lstrip/rstrip; report the token's own bytes.
    const std::string& s = t.text[f.id];
    const size_t at = text.substr(f.b, f.e - f.b).find(s);
    if (at == std::string_view::npos || s.empty()) continue;
    out.push_back({f.b + at, f.b + at + s.size(), f.id});
  }
  return out;
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool add_special, bool parse_special,
                                            const std::vector<TextSpan>& literal) const {
  const TokenizerImpl& t = *impl_;
  const size_t bad = utf8::find_invalid(text);
  if (bad != std::string_view::npos) {
    fail("tokenizer: input text is not valid UTF-8 (byte 0x{:02X} at offset {})",
         static_cast<unsigned char>(text[bad]), bad);
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out.insert(out.end(), t.prefix_ids.begin(), t.prefix_ids.end());

  std::vector<tok::Fragment> frags;
  std::vector<tok::Span> lit;
  lit.reserve(literal.size());
  for (const TextSpan& s : literal) lit.push_back({s.begin, s.end});
  t.splitter->split(text, parse_special, t.sem == Semantics::LlamaCpp, frags, lit);

  FragmentEncoder enc(t);
  bool prev_special = true;  // llama.cpp SPM: a space prefix at the start and after specials
  for (const tok::Fragment& f : frags) {
    if (f.id >= 0) {
      out.push_back(f.id);
      prev_special = true;
      continue;
    }
    if (f.e <= f.b) continue;
    enc.encode(text.substr(f.b, f.e - f.b), f.b == 0, prev_special, out);
    prev_special = false;
  }
  if (add_special) out.insert(out.end(), t.suffix_ids.begin(), t.suffix_ids.end());
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return decode(ids, skip_special, true);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special, bool clean_up_spaces) const {
  // Same pieces as the streaming path; the clean-up runs once over the whole text.
  tok::DecodeState st(*impl_, skip_special, /*clean_up_spaces=*/false);
  std::string out;
  for (int32_t id : ids) st.push(id, out);
  st.finish(out);
  if (clean_up_spaces && !impl_->cleanup.empty()) out = tok::apply_cleanup(impl_->cleanup, std::move(out));
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  impl_->check_id(id, "token_to_piece");
  if (!render_special && impl_->skippable[id]) return {};
  return impl_->piece[id];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id, "token_text");
  return impl_->text[id];
}

int32_t Tokenizer::n_vocab() const {
  return static_cast<int32_t>(impl_->text.size());
}
int32_t Tokenizer::bos_id() const {
  return impl_->bos;
}
int32_t Tokenizer::eos_id() const {
  return impl_->eos;
}
bool Tokenizer::add_bos() const {
  return std::find(impl_->prefix_ids.begin(), impl_->prefix_ids.end(), impl_->bos) !=
             impl_->prefix_ids.end() &&
         impl_->bos >= 0;
}
bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->eog_flag[id] != 0;
}
const std::vector<int32_t>& Tokenizer::eog_ids() const {
  return impl_->eog;
}
TokenType Tokenizer::token_type(int32_t id) const {
  impl_->check_id(id, "token_type");
  return impl_->type[id];
}
const std::string& Tokenizer::chat_template() const {
  return impl_->chat_template;
}
std::string Tokenizer::bos_text() const {
  return impl_->bos >= 0 ? impl_->text[impl_->bos] : "";
}
std::string Tokenizer::eos_text() const {
  return impl_->eos >= 0 ? impl_->text[impl_->eos] : "";
}
std::string Tokenizer::kind() const {
  switch (impl_->algo) {
    case Algo::Spm:
      return "spm";
    case Algo::Bpe:
      return "bpe";
    case Algo::WordPiece:
      return "wordpiece";
  }
  return "";
}

// ---- StreamDecoder ----

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special, bool at_text_start)
    : state_(std::make_unique<tok::DecodeState>(tok.impl(), skip_special, true, at_text_start)) {}
StreamDecoder::~StreamDecoder() = default;

std::string StreamDecoder::push(int32_t id) {
  std::string text = std::move(utf8_pending_);
  utf8_pending_.clear();
  state_->push(id, text);
  const size_t tail = utf8::incomplete_tail(text);
  utf8_pending_.assign(text, text.size() - tail, tail);
  text.resize(text.size() - tail);
  return text;
}

std::string StreamDecoder::flush() {
  std::string text = std::move(utf8_pending_);
  utf8_pending_.clear();
  state_->finish(text);
  return text;
}

}  // namespace ferrum
