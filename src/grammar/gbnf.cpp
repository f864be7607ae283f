#include "grammar/gbnf.h"

#include "core/fail.h"
#include "grammar/utf8_ranges.h"

namespace ferrum::grammar {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  Parser(std::string_view s, GrammarBuilder& b) : s_(s), b_(b) {}

  void parse() {
    skip_space(true);
    while (i_ < s_.size()) {
      const std::string name = parse_name();
      skip_space(false);
      if (s_.substr(i_, 3) != "::=") error("expected '::=' after rule name '{}'", name);
      i_ += 3;
      skip_space(true);
      Expr body = parse_alternatives(false);
      if (i_ < s_.size() && s_[i_] != '\n') error("unexpected '{}'", s_[i_]);
      skip_space(true);
      try {
        b_.define(name, std::move(body));
      } catch (const Error& e) {
        error("{}", e.what());
      }
    }
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... args) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("grammar: line {}, column {}: {}", line, col, fmt::format(f, std::forward<Args>(args)...));
  }

  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }

  // Spaces, tabs, comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++i_;
      } else {
        return;
      }
    }
  }
  // At a newline outside parentheses: whether the next non-blank line continues with '|'.
  bool continues_on_next_line() {
    size_t save = i_;
    skip_space(true);
    if (at('|')) return true;
    i_ = save;
    return false;
  }

  std::string parse_name() {
    const size_t start = i_;
    while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
    if (i_ == start) error("expected a rule name");
    return std::string(s_.substr(start, i_ - start));
  }

  Expr parse_alternatives(bool nested) {
    std::vector<Expr> alts;
    alts.push_back(parse_sequence(nested));
    for (;;) {
      if (!nested && at('\n') && !continues_on_next_line()) break;
      if (!at('|')) break;
      ++i_;
      skip_space(nested);
      alts.push_back(parse_sequence(nested));
    }
    return alts.size() == 1 ? std::move(alts[0]) : Expr::alt(std::move(alts));
  }

  Expr parse_sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      skip_space(nested);
      if (i_ >= s_.size() || at('|') || at(')') || at('\n')) break;
      Expr atom = parse_atom(nested);
      for (;;) {
        if (at('*')) {
          atom = Expr::repeat(std::move(atom), 0, -1), ++i_;
        } else if (at('+')) {
          atom = Expr::repeat(std::move(atom), 1, -1), ++i_;
        } else if (at('?')) {
          atom = Expr::repeat(std::move(atom), 0, 1), ++i_;
        } else if (at('{')) {
          atom = parse_braces(std::move(atom));
        } else {
          break;
        }
      }
      items.push_back(std::move(atom));
    }
    return items.size() == 1 ? std::move(items[0]) : Expr::seq(std::move(items));
  }

  Expr parse_braces(Expr atom) {
    ++i_;
    skip_space(true);
    const int lo = parse_int();
    int hi = lo;
    skip_space(true);
    if (at(',')) {
      ++i_;
      skip_space(true);
      hi = at('}') ? -1 : parse_int();
      skip_space(true);
    }
    if (!at('}')) error("expected '}}' to close the repetition");
    ++i_;
    if (hi >= 0 && hi < lo) error("repetition {{{},{}}} has max < min", lo, hi);
    return Expr::repeat(std::move(atom), lo, hi);
  }

  int parse_int() {
    const size_t start = i_;
    long v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + (s_[i_++] - '0');
      if (v > kMaxRepeat) error("repetition count above {}", kMaxRepeat);
    }
    if (i_ == start) error("expected a number");
    return static_cast<int>(v);
  }

  Expr parse_atom(bool nested) {
    const char c = s_[i_];
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++i_;
      return Expr::chars({{0, kMaxCp}});
    }
    if (c == '(') {
      if (++depth_ > kMaxNesting) error("groups nest deeper than {} levels", kMaxNesting);
      ++i_;
      skip_space(true);
      Expr inner = parse_alternatives(true);
      skip_space(true);
      if (!at(')')) error("expected ')'");
      ++i_;
      --depth_;
      return inner;
    }
    if (is_name_char(c)) {
      const size_t save = i_;
      std::string name = parse_name();
      skip_space(false);
      if (s_.substr(i_, 3) == "::=") {
        i_ = save;
        error("rule '{}' starts before the previous rule ended (a missing newline?)", name);
      }
      return Expr::ref(std::move(name));
    }
    error("unexpected '{}'", c);
  }

  Expr parse_literal() {
    ++i_;
    std::string bytes;
    while (!at('"')) {
      if (i_ >= s_.size() || at('\n')) error("unterminated string literal");
      append_utf8(bytes, parse_char());
    }
    ++i_;
    return Expr::literal(bytes);
  }

  Expr parse_class() {
    ++i_;
    bool negated = false;
    if (at('^')) negated = true, ++i_;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (!at(']')) {
      if (i_ >= s_.size() || at('\n')) error("unterminated character class");
      const size_t start = i_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (at('-') && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        if (at('\n')) error("unterminated character class");
        hi = parse_char();
        if (hi < lo) i_ = start, error("character range is reversed (U+{:04X} > U+{:04X})", lo, hi);
      }
      ranges.emplace_back(lo, hi);
    }
    ++i_;
    return Expr::chars(std::move(ranges), negated);
  }

  // One character of a literal or class: an escape or a UTF-8 encoded code point.
  uint32_t parse_char() {
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c == '\\') {
      ++i_;
      if (i_ >= s_.size()) error("incomplete escape");
      const char e = s_[i_++];
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          return static_cast<uint8_t>(e);
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          --i_, error("unknown escape '\\{}'", e);
      }
    }
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + len > s_.size()) error("invalid UTF-8");
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s_[i_ + k]);
      if ((d & 0xC0) != 0x80) error("invalid UTF-8");
      cp = (cp << 6) | (d & 0x3F);
    }
    i_ += len;
    return cp;
  }

  uint32_t parse_hex(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k, ++i_) {
      if (i_ >= s_.size()) error("expected {} hex digits", n);
      const char h = s_[i_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) error("expected {} hex digits", n);
      v = v * 16 + d;
    }
    if (v > kMaxCp) error("code point U+{:X} is above U+10FFFF", v);
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    for (uint8_t b : encode_utf8(cp)) out.push_back(static_cast<char>(b));
  }

  static constexpr uint32_t kMaxCp = 0x10FFFF;
  static constexpr int kMaxNesting = 64;
  int depth_ = 0;
  std::string_view s_;
  GrammarBuilder& b_;
  size_t i_ = 0;
};

}  // namespace

void parse_gbnf(std::string_view text, GrammarBuilder& b) {
  Parser(text, b).parse();
}

Grammar compile_gbnf(std::string_view text) {
  GrammarBuilder b;
  parse_gbnf(text, b);
  return b.build("root");
}

}  // namespace ferrum::grammar
