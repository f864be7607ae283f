// WordPiece: greedy longest-match-first over each word.
//  - HF (tokenizer.json): continuation pieces carry the "##" prefix; a word longer than
//    max_input_chars_per_word, or with any unmatched piece, becomes one [UNK].
//  - llama.cpp (GGUF "bert"): the converter stores word-initial pieces with a "▁" phantom space
//    and continuation pieces bare; text is normalized by llama.cpp's own BERT preprocessing.
#include "core/utf8.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ferrum::tok {

void wordpiece_encode_word(const TokenizerImpl& t, std::string_view word, std::vector<int32_t>& out) {
  if (word.empty()) return;
  size_t n_chars = 0;
  for (unsigned char c : word) n_chars += !utf8::is_continuation(c);
  if (n_chars > t.wp_max_chars) {
    out.push_back(t.unk);
    return;
  }
  const size_t mark = out.size();
  std::string cand;
  size_t start = 0;
  while (start < word.size()) {
    size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      cand.clear();
      if (start > 0) cand += t.wp_prefix;
      cand.append(word.substr(start, end - start));
      found = t.find(cand);
      if (found >= 0) break;
      // step back one UTF-8 character
      do {
        --end;
      } while (end > start && utf8::is_continuation(static_cast<uint8_t>(word[end])));
    }
    if (found < 0) {
      out.resize(mark);
      out.push_back(t.unk);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

namespace {

bool is_chinese_char(uint32_t cp) {
  // CJK blocks as in BERT's tokenization.py / HF tokenizers (0x2B920 as in the Rust code).
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace

bool bert_is_chinese_char(uint32_t cp) {
  return is_chinese_char(cp);
}

void llamacpp_wpm_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
  using namespace unicode;
  // llama.cpp's preprocessing: "NFD" keeps only the first code point of the decomposition,
  // every mark (Mn/Mc/Me) is dropped, lower-casing is the simple one-to-one mapping.
  std::vector<std::string> words(1);
  std::vector<uint32_t> tmp;
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = utf8::next_cp(text, i);
    if (t.wp_strip_accents) {
      tmp.clear();
      append_nfd(tmp, cp);
      cp = tmp[0];
    }
    if (is_white_space(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const Category cat = category(cp);
    const bool is_control =
        cat == Category::Cc || cat == Category::Cf || cat == Category::Co || cat == Category::Cs;
    if (cp == 0 || cp == 0xFFFD || is_control) continue;
    if (t.wp_strip_accents && is_mark(cat)) continue;
    if (t.wp_lowercase) {
      tmp.clear();
      append_lower(tmp, cp);
      cp = tmp[0];
    }
    std::string s;
    utf8::append(s, cp);
    if (is_punct(cat) || (cp < 0x7F && is_symbol(cat)) || is_chinese_char(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = s;
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();

  std::string w1;
  for (const std::string& word : words) {
    if (word.empty()) continue;
    w1 = "\xE2\x96\x81" + word;  // phantom space
    const size_t n = w1.size();
    const size_t mark = out.size();
    for (size_t i = 0; i < n; ++i) {
      bool match = false;
      for (size_t j = std::min(n, i + t.max_token_len + 1); j > i; --j) {
        const int32_t id = t.find(std::string_view(w1).substr(i, j - i));
        if (id >= 0) {
          out.push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {
        out.resize(mark);
        break;
      }
    }
    if (out.size() == mark) out.push_back(t.unk);
  }
}

}  // namespace ferrum::tok
