#include "template/jinja/lexer.h"

#include <fmt/format.h>

#include <cstring>

#include "template/jinja/error.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

namespace {

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& name) : name_(name) {
    // Jinja normalizes newlines and (keep_trailing_newline=False) drops one trailing newline.
    src_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        src_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        src_ += src[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t open = find_open(pos_);
      if (open == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        advance_to(src_.size());
        break;
      }
      char kind = src_[open + 1];
      char sign =
          open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+') ? src_[open + 2] : 0;
      std::string text = src_.substr(pos_, open - pos_);
      size_t text_start = pos_;
      if (sign == '-') {
        text = text::strip(text, std::nullopt, false, true);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop the indentation before a block or comment tag on its own line.
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting_) && l_pos < text.size() && all_space(text, l_pos))
          text.resize(l_pos);
      }
      emit_text(std::move(text), text_start);
      advance_to(open);
      size_t body = open + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        lex_comment(body);
      } else if (kind == '%' && is_raw_begin(body)) {
        lex_raw();
      } else {
        lex_tag(kind, body);
      }
    }
    Token eof{Tok::Eof, "", 0, 0, line_, col_};
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail_at(int line, int col, const std::string& msg) {
    throw TemplateError("TemplateSyntaxError", msg, fmt::format("{}:{}:{}", name_, line, col));
  }

  size_t find_open(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  static bool all_space(const std::string& s, size_t from) {
    for (size_t i = from; i < s.size();)
      if (!text::is_space(text::decode_at(s, i))) return false;
    return true;
  }

  // Moves pos_ forward, keeping line/column and line_starting_ up to date.
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else if ((static_cast<uint8_t>(src_[pos_]) & 0xc0) != 0x80) {
        ++col_;
      }
    }
    if (p > 0) line_starting_ = src_[p - 1] == '\n';
  }

  size_t skip_ws(size_t p) const {
    while (p < src_.size()) {
      size_t q = p;
      if (!text::is_space(text::decode_at(src_, q))) break;
      p = q;
    }
    return p;
  }

  void emit_text(std::string text, size_t at) {
    if (text.empty()) return;
    // line/col of the text start: count from pos_ (text always starts at pos_)
    (void)at;
    tokens_.push_back(Token{Tok::Text, std::move(text), 0, 0, line_, col_});
  }

  void lex_comment(size_t body) {
    int l = line_, c = col_;
    size_t end = src_.find("#}", body);
    if (end == std::string::npos) fail_at(l, c, "missing end of comment tag '#}'");
    size_t after = end + 2;
    if (end > body && src_[end - 1] == '-')
      after = skip_ws(after);
    else if (!(end > body && src_[end - 1] == '+') && after < src_.size() && src_[after] == '\n')
      ++after;  // trim_blocks
    advance_to(after);
  }

  bool starts_word(size_t p, const char* w) const {
    size_t n = std::strlen(w);
    if (src_.compare(p, n, w) != 0) return false;
    return p + n >= src_.size() ||
           !(std::isalnum(static_cast<unsigned char>(src_[p + n])) || src_[p + n] == '_');
  }

  bool is_raw_begin(size_t body) const { return starts_word(skip_ws(body), "raw"); }

  void lex_raw() {
    int l = line_, c = col_;
    size_t p = skip_ws(skip_ws(pos_ + 2 + ((src_[pos_ + 2] == '-' || src_[pos_ + 2] == '+') ? 1 : 0)) + 3);
    if (src_.compare(p, 3, "-%}") == 0) {
      p = skip_ws(p + 3);
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      fail_at(l, c, "expected '%}' after 'raw'");
    }
    advance_to(p);
    // Find {% endraw %}.
    for (size_t q = src_.find("{%", p); q != std::string::npos; q = src_.find("{%", q + 1)) {
      char sign = q + 2 < src_.size() && (src_[q + 2] == '-' || src_[q + 2] == '+') ? src_[q + 2] : 0;
      size_t w = skip_ws(q + 2 + (sign ? 1 : 0));
      if (!starts_word(w, "endraw")) continue;
      size_t e = skip_ws(w + 6);
      size_t after;
      if (src_.compare(e, 3, "+%}") == 0) {
        after = e + 3;
      } else if (src_.compare(e, 3, "-%}") == 0) {
        after = skip_ws(e + 3);
      } else if (src_.compare(e, 2, "%}") == 0) {
        after = e + 2;
        if (after < src_.size() && src_[after] == '\n') ++after;
      } else {
        continue;
      }
      std::string text = src_.substr(p, q - p);
      if (sign == '-') {
        text = text::strip(text, std::nullopt, false, true);
      } else if (sign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 && l_pos < text.size() && all_space(text, l_pos)) text.resize(l_pos);
      }
      emit_text(std::move(text), p);
      advance_to(after);
      return;
    }
    fail_at(l, c, "missing '{% endraw %}' for this raw block");
  }

  void lex_tag(char kind, size_t body) {
    bool block = kind == '%';
    int tag_line = line_, tag_col = col_;
    tokens_.push_back(Token{block ? Tok::BlockBegin : Tok::VarBegin, "", 0, 0, line_, col_});
    advance_to(body);
    std::vector<char> stack;  // open brackets
    while (true) {
      advance_to(skip_ws(pos_));
      if (pos_ >= src_.size())
        fail_at(tag_line, tag_col,
                block ? "unexpected end of template, expected '%}'"
                      : "unexpected end of template, expected '}}'");
      if (stack.empty()) {
        const char* close = block ? "%}" : "}}";
        size_t after = std::string::npos;
        if ((src_[pos_] == '-' || src_[pos_] == '+') && src_.compare(pos_ + 1, 2, close) == 0) {
          after = src_[pos_] == '-' ? skip_ws(pos_ + 3) : pos_ + 3;
        } else if (src_.compare(pos_, 2, close) == 0) {
          after = pos_ + 2;
          if (block && after < src_.size() && src_[after] == '\n') ++after;  // trim_blocks
        }
        if (after != std::string::npos) {
          tokens_.push_back(Token{block ? Tok::BlockEnd : Tok::VarEnd, "", 0, 0, line_, col_});
          advance_to(after);
          return;
        }
      }
      lex_one(stack);
    }
  }

  void lex_one(std::vector<char>& stack) {
    char c = src_[pos_];
    Token t{Tok::Op, "", 0, 0, line_, col_};
    size_t p = pos_;
    if (std::isdigit(static_cast<unsigned char>(c))) {
      bool after_dot = !tokens_.empty() && tokens_.back().type == Tok::Op && tokens_.back().text == ".";
      size_t q = p;
      auto digits = [&](size_t& i) {
        size_t s = i;
        while (i < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[i])) ||
                                   (src_[i] == '_' && i > s && i + 1 < src_.size() &&
                                    std::isdigit(static_cast<unsigned char>(src_[i + 1])))))
          ++i;
      };
      digits(q);
      bool is_float = false;
      if (!after_dot && q + 1 < src_.size() && src_[q] == '.' &&
          std::isdigit(static_cast<unsigned char>(src_[q + 1]))) {
        ++q;
        digits(q);
        is_float = true;
      }
      if (!after_dot && q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r]))) {
          digits(r);
          q = r;
          is_float = true;
        }
      }
      std::string num;
      for (size_t i = p; i < q; ++i)
        if (src_[i] != '_') num += src_[i];
      t.text = num;
      if (is_float) {
        t.type = Tok::Float;
        t.fval = std::strtod(num.c_str(), nullptr);
      } else {
        t.type = Tok::Int;
        errno = 0;
        t.ival = std::strtoll(num.c_str(), nullptr, 10);
        if (errno == ERANGE) fail_at(line_, col_, "integer literal too large: " + num);
      }
      tokens_.push_back(std::move(t));
      advance_to(q);
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t q = p;
      while (q < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[q])) || src_[q] == '_')) ++q;
      t.type = Tok::Name;
      t.text = src_.substr(p, q - p);
      tokens_.push_back(std::move(t));
      advance_to(q);
      return;
    }
    if (c == '\'' || c == '"') {
      t.type = Tok::String;
      size_t q = p + 1;
      std::string raw;
      while (true) {
        if (q >= src_.size()) fail_at(line_, col_, "unterminated string literal");
        if (src_[q] == c) break;
        if (src_[q] == '\\' && q + 1 < src_.size()) {
          raw += src_[q];
          raw += src_[q + 1];
          q += 2;
          continue;
        }
        raw += src_[q++];
      }
      t.text = unescape(raw);
      tokens_.push_back(std::move(t));
      advance_to(q + 1);
      return;
    }
    static const char* ops2[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : ops2) {
      if (src_.compare(p, 2, op) == 0) {
        t.text = op;
        tokens_.push_back(std::move(t));
        advance_to(p + 2);
        return;
      }
    }
    if (std::strchr("+-/*%~<>=.,:|()[]{};!", c) && c != 0) {
      if (c == '!') fail_at(line_, col_, "unexpected character '!'");
      if (c == '(' || c == '[' || c == '{') stack.push_back(c);
      if (c == ')' || c == ']' || c == '}') {
        char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (stack.empty() || stack.back() != want) fail_at(line_, col_, fmt::format("unexpected '{}'", c));
        stack.pop_back();
      }
      t.text = std::string(1, c);
      tokens_.push_back(std::move(t));
      advance_to(p + 1);
      return;
    }
    size_t q = p;
    uint32_t cp = text::decode_at(src_, q);
    std::string ch;
    text::append_utf8(ch, cp);
    fail_at(line_, col_, fmt::format("unexpected character '{}'", ch));
  }

  // Python unicode-escape decoding of a string literal body.
  std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      char e = s[++i];
      auto hex = [&](int n) -> uint32_t {
        uint32_t v = 0;
        for (int k = 1; k <= n; ++k) {
          if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k])))
            fail_at(line_, col_, "truncated \\x/\\u escape in string literal");
          char h = s[i + k];
          v = v * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        i += n;
        return v;
      };
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\n':
          break;
        case 'x':
          text::append_utf8(out, hex(2));
          break;
        case 'u':
          text::append_utf8(out, hex(4));
          break;
        case 'U': {
          uint32_t v = hex(8);
          if (v > 0x10ffff) fail_at(line_, col_, "illegal Unicode character in string literal");
          text::append_utf8(out, v);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = e - '0';
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
              v = v * 8 + (s[++i] - '0');
            text::append_utf8(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  std::string src_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const std::string& name) {
  return Lexer(source, name).run();
}

}  // namespace ferrum::jinja
