// Hugging Face tokenizers' normalizers and pre-tokenizers (the subset ferrum's models use), also
// used for llama.cpp's BPE pre-tokenizer regexes.
#include <algorithm>

#include "core/fail.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ferrum::tok {

bool bert_is_chinese_char(uint32_t cp);  // wordpiece.cpp

const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// o200k (gpt-4o, gpt-oss): tokenizer.json's pattern, as llama.cpp's GPT4O pre-tokenizer quotes it.
const char* const kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

using namespace unicode;

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  if (pos == 0) return;
  out.append(s, pos);
  s.swap(out);
}

std::string bert_normalize(const NormStep& st, std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = utf8::next_cp(text, i);
    if (st.clean_text) {
      if (cp == 0 || cp == 0xFFFD) continue;
      const bool ws_ctl = cp == '\t' || cp == '\n' || cp == '\r';
      // Control = Cc/Cf/Co/Cs. Unassigned (Cn, e.g. U+FFFF) is kept, as tokenizers.js and
      // llama.cpp do (the reference for this path); it then becomes [UNK].
      const Category c = category(cp);
      const bool control = c == Category::Cc || c == Category::Cf || c == Category::Co || c == Category::Cs;
      if (!ws_ctl && control) continue;
      if (is_white_space(cp)) cp = ' ';
    }
    if (st.chinese && bert_is_chinese_char(cp)) {
      cps.push_back(' ');
      cps.push_back(cp);
      cps.push_back(' ');
      continue;
    }
    cps.push_back(cp);
  }
  if (st.strip_accents) {
    std::vector<uint32_t> d = nfd(cps);
    cps.clear();
    for (uint32_t cp : d) {
      if (category(cp) != Category::Mn) cps.push_back(cp);
    }
  }
  if (st.lowercase) {
    std::vector<uint32_t> low;
    low.reserve(cps.size());
    for (uint32_t cp : cps) append_lower(low, cp);
    cps.swap(low);
  }
  return utf8::encode(cps);
}

using Seg = std::pair<size_t, size_t>;

// Splits [b,e) of buf at the delimiter ranges `delims` (sorted, inside [b,e)) per behavior.
void split_by(size_t b, size_t e, const std::vector<Seg>& delims, PreTokStep::Behavior behavior, bool invert,
              std::vector<Seg>& out) {
  struct Piece {
    size_t b, e;
    bool match;
  };
  std::vector<Piece> pieces;
  size_t pos = b;
  for (const auto& [mb, me] : delims) {
    if (mb > pos) pieces.push_back({pos, mb, invert});
    pieces.push_back({mb, me, !invert});
    pos = me;
  }
  if (pos < e) pieces.push_back({pos, e, invert});

  std::vector<Piece> res;
  switch (behavior) {
    case PreTokStep::Isolated:
      res = pieces;
      break;
    case PreTokStep::Removed:
      for (const auto& p : pieces) {
        if (!p.match) res.push_back(p);
      }
      break;
    case PreTokStep::Contiguous:
      for (const auto& p : pieces) {
        if (p.match && !res.empty() && res.back().match) {
          res.back().e = p.e;
        } else {
          res.push_back(p);
        }
      }
      break;
    case PreTokStep::MergedWithPrevious: {
      bool prev_match = false;
      for (const auto& p : pieces) {
        if (p.match && !prev_match && !res.empty()) {
          res.back().e = p.e;
        } else {
          res.push_back({p.b, p.e, false});
        }
        prev_match = p.match;
      }
      break;
    }
    case PreTokStep::MergedWithNext: {
      bool prev_match = false;
      for (size_t k = pieces.size(); k-- > 0;) {
        const auto& p = pieces[k];
        if (p.match && !prev_match && !res.empty()) {
          res.back().b = p.b;
        } else {
          res.push_back({p.b, p.e, false});
        }
        prev_match = p.match;
      }
      std::reverse(res.begin(), res.end());
      break;
    }
  }
  for (const auto& p : res) {
    if (p.e > p.b) out.emplace_back(p.b, p.e);
  }
}

// Delimiters of a character-class split (BERT whitespace/punctuation, digits).
template <typename Pred>
void char_delims(std::string_view s, size_t base, Pred pred, std::vector<Seg>& out) {
  for (size_t i = 0; i < s.size();) {
    const size_t st = i;
    const uint32_t cp = utf8::next_cp(s, i);
    if (pred(cp)) out.emplace_back(base + st, base + i);
  }
}

bool bert_punct(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
           (cp >= 123 && cp <= 126);
  }
  return is_punct(category(cp));
}

}  // namespace

std::string apply_normalizers(const std::vector<NormStep>& steps, std::string_view text,
                              bool /*first_fragment*/) {
  std::string s(text);
  for (const NormStep& st : steps) {
    switch (st.kind) {
      case NormStep::Prepend:
        if (!s.empty()) s.insert(0, st.a);
        break;
      case NormStep::Replace:
        replace_all(s, st.a, st.b);
        break;
      case NormStep::NFC:
        s = nfc(s);
        break;
      case NormStep::NFD:
        s = utf8::encode(nfd(utf8::decode(s)));
        break;
      case NormStep::Lowercase: {
        std::vector<uint32_t> low;
        for (uint32_t cp : utf8::decode(s)) append_lower(low, cp);
        s = utf8::encode(low);
        break;
      }
      case NormStep::StripAccents: {
        std::vector<uint32_t> keep;
        for (uint32_t cp : utf8::decode(s)) {
          if (category(cp) != Category::Mn) keep.push_back(cp);
        }
        s = utf8::encode(keep);
        break;
      }
      case NormStep::Bert:
        s = bert_normalize(st, s);
        break;
    }
  }
  return s;
}

void pre_tokenize(const std::vector<PreTokStep>& steps, std::string& buf, std::vector<Seg>& spans,
                  bool first_fragment) {
  spans.clear();
  if (buf.empty()) return;
  spans.emplace_back(0, buf.size());
  std::vector<Seg> next, delims;
  bool first_step = true;
  for (const PreTokStep& st : steps) {
    if (st.kind == PreTokStep::Metaspace) {
      if (!first_step) fail("tokenizer.json: Metaspace pre-tokenizer is only supported first");
      replace_all(buf, " ", st.replacement);
      const bool prepend = st.prepend_scheme == 0 || (st.prepend_scheme == 1 && first_fragment);
      if (prepend && buf.compare(0, st.replacement.size(), st.replacement) != 0) {
        buf.insert(0, st.replacement);
      }
      spans.assign(1, {0, buf.size()});
      if (st.metaspace_split) {
        delims.clear();
        for (size_t p = buf.find(st.replacement); p != std::string::npos;
             p = buf.find(st.replacement, p + st.replacement.size())) {
          delims.emplace_back(p, p + st.replacement.size());
        }
        next.clear();
        split_by(0, buf.size(), delims, PreTokStep::MergedWithNext, false, next);
        spans.swap(next);
      }
      first_step = false;
      continue;
    }
    first_step = false;
    next.clear();
    for (const auto& [b, e] : spans) {
      const std::string_view s(buf.data() + b, e - b);
      delims.clear();
      switch (st.kind) {
        case PreTokStep::Split:
        case PreTokStep::ByteLevelRegex: {
          st.regex->find_all(s, delims);
          for (auto& d : delims) d.first += b, d.second += b;
          split_by(b, e, delims, st.behavior, st.invert, next);
          break;
        }
        case PreTokStep::Whitespace: {  // \w+|[^\w\s]+ : keep the matches only
          st.regex->find_all(s, delims);
          for (auto& d : delims) next.emplace_back(d.first + b, d.second + b);
          break;
        }
        case PreTokStep::WhitespaceSplit:
          char_delims(s, b, is_white_space, delims);
          split_by(b, e, delims, PreTokStep::Removed, false, next);
          break;
        case PreTokStep::Bert: {
          std::vector<Seg> ws_split;
          char_delims(s, b, is_white_space, delims);
          split_by(b, e, delims, PreTokStep::Removed, false, ws_split);
          for (const auto& [wb, we] : ws_split) {
            delims.clear();
            char_delims(std::string_view(buf.data() + wb, we - wb), wb, bert_punct, delims);
            split_by(wb, we, delims, PreTokStep::Isolated, false, next);
          }
          break;
        }
        case PreTokStep::Digits: {
          char_delims(
              s, b, [](uint32_t cp) { return is_number(category(cp)) && category(cp) == Category::Nd; },
              delims);
          split_by(b, e, delims, st.individual_digits ? PreTokStep::Isolated : PreTokStep::Contiguous, false,
                   next);
          break;
        }
        case PreTokStep::Metaspace:
          break;
      }
    }
    spans.swap(next);
  }
}

}  // namespace ferrum::tok
