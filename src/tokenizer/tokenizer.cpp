#include "ferrum/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "core/fail.h"
#include "tokenizer/decoder.h"
#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

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
  if (s.size() != 6 || s.compare(0, 3, "<0x") != 0 || s[5] != '>') return -1;
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

}  // namespace

void TokenizerImpl::finalize() {
  const size_t n = text.size();
  if (n == 0) fail("tokenizer: empty vocabulary");
  score.resize(n, 0.0f);
  type.resize(n, TokenType::Normal);
  to_id.clear();
  to_id.reserve(n * 2);
  max_token_len = 0;
  for (size_t i = 0; i < n; ++i) {
    to_id.emplace(text[i], static_cast<int32_t>(i));  // first id wins on duplicates
    max_token_len = std::max(max_token_len, text[i].size());
  }

  // SPM merges stay inside "▁"-started segments unless some token has "▁" after another char.
  spm_word_local = true;
  for (const std::string& s : text) {
    for (size_t p = s.find("\xE2\x96\x81", 1); p != std::string::npos; p = s.find("\xE2\x96\x81", p + 3)) {
      if (p < 3 || s.compare(p - 3, 3, "\xE2\x96\x81") != 0) spm_word_local = false;
    }
  }

  // SPM: every way to write a token as the concatenation of two tokens.
  spm_pairs = tok::MergeMap();
  if (algo == Algo::Spm) {
    spm_pairs.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view s = text[i];
      if (find(s) != static_cast<int32_t>(i)) continue;  // duplicate text
      for (size_t k = unicode::utf8_len(static_cast<uint8_t>(s[0])); k < s.size();
           k += unicode::utf8_len(static_cast<uint8_t>(s[k]))) {
        const int32_t a = find(s.substr(0, k)), b = find(s.substr(k));
        if (a >= 0 && b >= 0) {
          spm_pairs.emplace((uint64_t(uint32_t(a)) << 32) | uint32_t(b), {static_cast<int32_t>(i), 0});
        }
      }
    }
  }

  // End-of-generation set (and llama.cpp's retyping by text).
  eog_flag.assign(n, 0);
  for (const char* s : kEogTexts) {
    const int32_t id = find(s);
    if (id < 0) continue;
    eog_flag[id] = 1;
    if (sem == Semantics::LlamaCpp) type[id] = TokenType::Control;
  }
  if (sem == Semantics::LlamaCpp) {
    for (const char* s : kFimTexts) {
      const int32_t id = find(s);
      if (id >= 0) type[id] = TokenType::Control;
    }
  }
  if (eos >= 0) eog_flag[eos] = 1;
  for (int32_t id : eog) eog_flag[id] = 1;
  eog.clear();
  for (size_t i = 0; i < n; ++i) {
    if (eog_flag[i]) eog.push_back(static_cast<int32_t>(i));
  }

  // Byte tokens.
  std::fill(std::begin(byte_token), std::end(byte_token), -1);
  if (byte_level) {
    for (int b = 0; b < 256; ++b) {
      std::string s;
      unicode::append_utf8(s, tok::byte_to_cp(static_cast<uint8_t>(b)));
      byte_token[b] = find(s);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const int b = parse_byte_token(text[i]);
      // llama.cpp's SPM byte_to_token looks the "<0xXX>" text up whatever its type.
      const bool usable = type[i] == TokenType::Byte || sem == Semantics::HF || algo == Algo::Spm;
      if (b >= 0 && usable && byte_token[b] < 0) {
        byte_token[b] = static_cast<int32_t>(i);
      }
    }
  }

  // Pieces (bytes each token contributes) and skippable flags.
  piece.assign(n, std::string());
  skippable.assign(n, 0);
  bytes_to_id.clear();
  for (size_t i = 0; i < n; ++i) {
    const TokenType ty = type[i];
    const std::string& s = text[i];
    skippable[i] = ty == TokenType::Control || ty == TokenType::Unknown;
    if (sem == Semantics::LlamaCpp && (ty == TokenType::Unused || ty == TokenType::Undefined)) {
      skippable[i] = 1;  // llama.cpp renders unsupported types as nothing
      continue;
    }
    if (ty == TokenType::Control || ty == TokenType::Unknown ||
        (ty == TokenType::UserDefined && sem == Semantics::LlamaCpp)) {
      piece[i] = s;
      continue;
    }
    if (ty == TokenType::Byte || (sem == Semantics::HF && piece_mode == PieceMode::Spm)) {
      const int b = parse_byte_token(s);
      if (b >= 0) {
        piece[i] = std::string(1, static_cast<char>(b));
        continue;
      }
    }
    switch (piece_mode) {
      case PieceMode::Spm:
        piece[i] = s;
        replace_all(piece[i], "\xE2\x96\x81", " ");
        break;
      case PieceMode::Raw:
        piece[i] = s;
        break;
      case PieceMode::ByteLevel: {
        std::string out;
        bool ok = true;
        for (size_t k = 0; k < s.size();) {
          const int b = tok::cp_to_byte(unicode::next_cp(s, k));
          if (b < 0) {
            ok = false;
            break;
          }
          out.push_back(static_cast<char>(b));
        }
        piece[i] = ok ? out : s;
        if (ok && ty == TokenType::Normal) bytes_to_id.emplace(out, static_cast<int32_t>(i));
        break;
      }
    }
  }

  // Added/special tokens matched in text (llama.cpp: by token type).
  if (sem == Semantics::LlamaCpp) {
    added.clear();
    for (size_t i = 0; i < n; ++i) {
      const TokenType ty = type[i];
      if (ty == TokenType::Control || ty == TokenType::UserDefined || ty == TokenType::Unknown) {
        added.push_back({static_cast<int32_t>(i), ty != TokenType::UserDefined});
      }
    }
  }
  std::stable_sort(added.begin(), added.end(), [&](const tok::AddedToken& a, const tok::AddedToken& b) {
    return text[a.id].size() > text[b.id].size();
  });
  if (phi3_rstrip) {
    for (auto& a : added) {
      const std::string& s = text[a.id];
      a.rstrip = !(s == "<unk>" || s == "<s>" || s == "<|endoftext|>");
    }
  }
  splitter = std::make_shared<tok::SpecialSplitter>();
  splitter->build(added, text);

  // BOS/EOS policy (llama.cpp); the HF loader sets prefix/suffix from the post-processor.
  if (sem == Semantics::LlamaCpp) {
    prefix_ids.clear();
    suffix_ids.clear();
    if (algo == Algo::WordPiece) {
      if (add_bos && bos >= 0) prefix_ids.push_back(bos);
      if (add_sep && sep >= 0) suffix_ids.push_back(sep);
    } else {
      if (add_bos && bos >= 0) prefix_ids.push_back(bos);
      if (add_eos && eos >= 0) suffix_ids.push_back(eos);
    }
  }
}

namespace {

void escape_spaces(std::string& s) {
  replace_all(s, " ", "\xE2\x96\x81");
}

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
  const size_t bad = unicode::find_invalid_utf8(text);
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

  // Per-call cache of BPE results by pre-token (words repeat a lot in real text).
  tok::FlatStrMap<std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> cached_ids;
  auto encode_word = [&](std::string_view w) {
    const auto* hit = cache.find(w);
    if (!hit) {
      const size_t start = out.size();
      tok::bpe_encode_word(t, w, out);
      const auto off = static_cast<uint32_t>(cached_ids.size());
      cached_ids.insert(cached_ids.end(), out.begin() + start, out.end());
      cache.emplace(w, std::make_pair(off, static_cast<uint32_t>(out.size() - start)));
      return;
    }
    out.insert(out.end(), cached_ids.begin() + hit->first, cached_ids.begin() + hit->first + hit->second);
  };
  bool prev_special = true;  // llama.cpp SPM: a space prefix at the start and after specials
  std::string buf;
  std::vector<std::pair<size_t, size_t>> spans;
  for (const tok::Fragment& f : frags) {
    if (f.id >= 0) {
      out.push_back(f.id);
      prev_special = true;
      continue;
    }
    if (f.e <= f.b) continue;
    const std::string_view frag = text.substr(f.b, f.e - f.b);
    if (t.sem == Semantics::LlamaCpp) {
      switch (t.algo) {
        case Algo::Spm:
          buf.clear();
          if (t.add_space_prefix && prev_special) buf = " ";
          buf.append(frag);
          escape_spaces(buf);
          tok::spm_encode(t, buf, out);
          break;
        case Algo::Bpe:
          buf.assign(frag);
          tok::pre_tokenize(t.pretok, buf, spans, f.b == 0);
          for (const auto& [b, e] : spans) {
            encode_word(std::string_view(buf).substr(b, e - b));
          }
          break;
        case Algo::WordPiece:
          tok::llamacpp_wpm_encode(t, frag, out);
          break;
      }
    } else {
      buf = tok::apply_normalizers(t.normalizers, frag, f.b == 0);
      tok::pre_tokenize(t.pretok, buf, spans, f.b == 0);
      for (const auto& [b, e] : spans) {
        const std::string_view w = std::string_view(buf).substr(b, e - b);
        if (t.algo == Algo::WordPiece) {
          tok::wordpiece_encode_word(t, w, out);
        } else {
          encode_word(w);
        }
      }
    }
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

namespace {

// Length of an incomplete (but so far well-formed) UTF-8 sequence at the end of s, else 0.
size_t incomplete_tail(const std::string& s) {
  const size_t n = s.size();
  for (size_t k = 1; k <= 3 && k <= n; ++k) {
    const auto c = static_cast<unsigned char>(s[n - k]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
    if (c >= 0xF5) return 0;
    return need > k ? k : 0;
  }
  return 0;
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
  std::string text = std::move(utf8_pending_);
  utf8_pending_.clear();
  state_->push(id, text);
  const size_t tail = incomplete_tail(text);
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
