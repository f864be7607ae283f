// A JSON Schema `pattern` (ECMA-262 regular expression subset) as a grammar expression over the
// content of a JSON string: literal characters are written as JSON would escape them, classes
// and `.` never produce an unescaped quote, backslash or control character.
#include <algorithm>
#include <vector>

#include "core/fail.h"
#include "grammar/json_schema.h"
#include "grammar/utf8_ranges.h"

namespace ferrum::grammar {

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

std::string cp_escape(uint32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9'))
    return std::string(1, char(cp));
  return cp <= 0xFFFF ? fmt::format("\\u{:04X}", cp) : fmt::format("\\U{:08X}", cp);
}

std::string gbnf_class(const Ranges& r, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (auto [lo, hi] : r) {
    out += cp_escape(lo);
    if (hi != lo) out += "-" + cp_escape(hi);
  }
  return out + "]";
}

// The JSON-escaped form of one code point inside a string.
std::string json_char(uint32_t cp) {
  std::string s;
  for (uint8_t b : encode_utf8(cp)) s.push_back(static_cast<char>(b));
  const nlohmann::json j = s;
  std::string dumped = j.dump();
  return gbnf_literal(std::string_view(dumped).substr(1, dumped.size() - 2));
}

const Ranges kForbidden = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};

class PatternParser {
 public:
  PatternParser(std::string_view p, const std::string& ch) : p_(p), ch_(ch) {}

  std::string parse() {
    bool start = false, end = false;
    if (!p_.empty() && p_[0] == '^') start = true, i_ = 1;
    if (p_.size() > i_ && p_.back() == '$' && !(p_.size() >= 2 && p_[p_.size() - 2] == '\\')) {
      end = true;
      p_.remove_suffix(1);
    }
    std::string body = alternatives();
    if (i_ != p_.size()) error("unexpected ')'");
    return (start ? "" : ch_ + "* ") + "(" + body + ")" + (end ? "" : " " + ch_ + "*");
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... args) const {
    fail("pattern '{}': {} (at offset {})", p_, fmt::format(f, std::forward<Args>(args)...), i_);
  }
  bool at(char c) const { return i_ < p_.size() && p_[i_] == c; }

  std::string alternatives() {
    std::string out = sequence();
    while (at('|')) {
      ++i_;
      out += " | " + sequence();
    }
    return out;
  }

  std::string sequence() {
    std::string out;
    while (i_ < p_.size() && !at('|') && !at(')')) {
      std::string a = atom();
      a = quantified(std::move(a));
      out += (out.empty() ? "" : " ") + a;
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string quantified(std::string a) {
    for (;;) {
      std::string q;
      if (at('*') || at('+') || at('?')) {
        q = std::string(1, p_[i_++]);
      } else if (at('{')) {
        const size_t close = p_.find('}', i_);
        if (close == std::string_view::npos) error("unterminated '{{'");
        q = std::string(p_.substr(i_, close - i_ + 1));
        for (char c : q.substr(1, q.size() - 2))
          if (!(c == ',' || (c >= '0' && c <= '9'))) error("bad repetition '{}'", q);
        i_ = close + 1;
      } else {
        return a;
      }
      if (at('?')) ++i_;  // lazy: the same set of strings
      a = "(" + a + ")" + q;
    }
  }

  std::string atom() {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (p_.substr(i_, 2) == "?:")
        i_ += 2;
      else if (at('?'))
        error("lookaround and named groups are not supported");
      std::string inner = alternatives();
      if (!at(')')) error("missing ')'");
      ++i_;
      return "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return gbnf_class(kForbidden, true);
    }
    if (c == '^' || c == '$') error("'{}' is only supported at the start/end of the pattern", c);
    if (c == '*' || c == '+' || c == '?' || c == '{') error("nothing to repeat");
    if (c == '\\') {
      Ranges r;
      bool negated = false;
      if (shorthand(r, negated)) return class_expr(r, negated);
      return json_char(escaped_char());
    }
    return json_char(next_cp());
  }

  uint32_t next_cp() {
    const auto c = static_cast<unsigned char>(p_[i_]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (i_ + len > p_.size()) error("invalid UTF-8");
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(p_[i_ + k]) & 0x3F);
    i_ += len;
    return cp;
  }

  // \d \w \s and their negations; false (nothing consumed) for another escape.
  bool shorthand(Ranges& r, bool& negated) {
    if (i_ + 1 >= p_.size()) error("pattern ends with '\\'");
    const char e = p_[i_ + 1];
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(e)));
    if (lower == 'd')
      r = {{'0', '9'}};
    else if (lower == 'w')
      r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    else if (lower == 's')
      r = {{' ', ' '}};
    else
      return false;
    negated = e != lower;
    i_ += 2;
    return true;
  }

  uint32_t escaped_char() {
    ++i_;
    const char e = p_[i_];
    switch (e) {
      case 'n':
        ++i_;
        return '\n';
      case 't':
        ++i_;
        return '\t';
      case 'r':
        ++i_;
        return '\r';
      case 'u': {
        if (i_ + 5 > p_.size()) error("\\u needs 4 hex digits");
        const std::string hex(p_.substr(i_ + 1, 4));
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
          error("\\u needs 4 hex digits");
        i_ += 5;
        return static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          error("escape '\\{}' is not supported", e);
        return next_cp();
    }
  }

  std::string char_class() {
    ++i_;
    bool negated = false;
    if (at('^')) negated = true, ++i_;
    Ranges r;
    while (!at(']')) {
      if (i_ >= p_.size()) error("unterminated '['");
      if (at('\\')) {
        Ranges s;
        bool neg = false;
        if (shorthand(s, neg)) {
          if (neg) error("negated shorthand inside a class is not supported");
          r.insert(r.end(), s.begin(), s.end());
          continue;
        }
      }
      const uint32_t lo = at('\\') ? escaped_char() : next_cp();
      uint32_t hi = lo;
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        hi = at('\\') ? escaped_char() : next_cp();
        if (hi < lo) error("reversed range in a class");
      }
      r.emplace_back(lo, hi);
    }
    ++i_;
    return class_expr(r, negated);
  }

  // A class as string content: a negated class also excludes what JSON must escape; a positive
  // class keeps its plain characters and writes quote, backslash and controls escaped.
  std::string class_expr(Ranges r, bool negated) {
    if (negated) {
      r.insert(r.end(), kForbidden.begin(), kForbidden.end());
      return gbnf_class(r, true);
    }
    std::vector<std::string> alts;
    Ranges plain;
    for (auto [lo, hi] : r) {
      for (uint32_t cp = lo; cp <= std::min<uint32_t>(hi, 0x5C); ++cp)
        if (cp < 0x20 || cp == '"' || cp == '\\') alts.push_back(json_char(cp));
      // Plain parts: [lo, hi] minus the forbidden code points.
      uint32_t from = lo;
      for (auto [flo, fhi] : kForbidden) {
        if (fhi < from || flo > hi) continue;
        if (flo > from) plain.emplace_back(from, flo - 1);
        from = fhi + 1;
      }
      if (from <= hi) plain.emplace_back(from, hi);
    }
    if (!plain.empty()) alts.insert(alts.begin(), gbnf_class(plain, false));
    if (alts.empty()) error("empty class");
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out + ")";
  }

  std::string_view p_;
  const std::string& ch_;
  size_t i_ = 0;
};

}  // namespace

std::string pattern_gbnf(std::string_view pattern, const std::string& ch) {
  return PatternParser(pattern, ch).parse();
}

}  // namespace ferrum::grammar
