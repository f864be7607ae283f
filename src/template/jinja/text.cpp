#include "template/jinja/text.h"

#include <algorithm>
#include <cstdio>

namespace ferrum::jinja::text {

uint32_t decode_at(std::string_view s, size_t& i) {
  auto b = static_cast<uint8_t>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    ++i;
    return b;
  }
  uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    auto c = static_cast<uint8_t>(s[i + k]);
    if ((c & 0xc0) != 0x80) {
      ++i;
      return b;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  i += n;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

std::vector<size_t> cp_offsets(std::string_view s) {
  std::vector<size_t> off;
  off.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    off.push_back(i);
    decode_at(s, i);
  }
  off.push_back(s.size());
  return off;
}

size_t cp_count(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decode_at(s, i);
  return n;
}

bool is_space(uint32_t cp) {
  // Python str.isspace(): bidi class WS/B/S or category Zs.
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000;
}

namespace {

std::vector<uint32_t> decode_all(std::string_view s) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < s.size();) cps.push_back(decode_at(s, i));
  return cps;
}

}  // namespace

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars) set = decode_all(*chars);
  auto strip_cp = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  auto off = cp_offsets(s);
  size_t n = off.size() - 1, b = 0, e = n;
  auto cp_at = [&](size_t k) {
    size_t i = off[k];
    return decode_at(s, i);
  };
  if (left)
    while (b < e && strip_cp(cp_at(b))) ++b;
  if (right)
    while (e > b && strip_cp(cp_at(e - 1))) --e;
  return std::string(s.substr(off[b], off[e] - off[b]));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t f = s.find(*sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  size_t i = 0;
  while (true) {
    // skip whitespace
    size_t j = i;
    while (j < s.size()) {
      size_t k = j;
      if (!is_space(decode_at(s, k))) break;
      j = k;
    }
    i = j;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      // rest (with trailing whitespace stripped) is the last piece
      out.push_back(strip(s.substr(i), std::nullopt, false, true));
      break;
    }
    size_t start = i;
    while (j < s.size()) {
      size_t k = j;
      if (is_space(decode_at(s, k))) break;
      j = k;
    }
    out.emplace_back(s.substr(start, j - start));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  auto off = cp_offsets(s);
  auto space_at = [&](size_t k) {
    size_t i = off[k];
    return is_space(decode_at(s, i));
  };
  size_t e = off.size() - 1;
  while (true) {
    while (e > 0 && space_at(e - 1)) --e;
    if (e == 0) break;
    if (static_cast<int64_t>(out.size()) >= maxsplit) {
      out.push_back(strip(s.substr(0, off[e]), std::nullopt, true, false));
      break;
    }
    size_t b = e;
    while (b > 0 && !space_at(b - 1)) --b;
    out.emplace_back(s.substr(off[b], off[e] - off[b]));
    e = b;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    size_t b = i;
    uint32_t cp = decode_at(s, i);
    bool brk = cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || cp == 0x1c || cp == 0x1d ||
               cp == 0x1e || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
    out.emplace_back(s.substr(start, (keepends ? i : b) - start));
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts repl before every code point and at the end.
    auto off = cp_offsets(s);
    int64_t n = 0;
    for (size_t k = 0; k + 1 < off.size(); ++k) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      out += s.substr(off[k], off[k + 1] - off[k]);
    }
    if (count < 0 || n < count) out += repl;
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out += s.substr(pos, f - pos);
    out += repl;
    pos = f + old.size();
    ++n;
  }
  out += s.substr(pos);
  return out;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(cp_count(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

namespace {

// Simple (one-to-one) case pairs for the common alphabets.
uint32_t to_upper_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if ((c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 0x20;
  if (c == 0xff) return 0x178;
  if (c == 0xb5) return 0x39c;
  if (c >= 0x100 && c <= 0x17f) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x131) return 'I';
    if (c == 0x17f) return 'S';
    if (c == 0x130 || c == 0x138 || c == 0x149 || c == 0x178) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 0x20;
  if (c == 0x3c2) return 0x3a3;
  if (c >= 0x3ac && c <= 0x3af) return c == 0x3ac ? 0x386 : c - 0x25;
  if (c >= 0x430 && c <= 0x44f) return c - 0x20;
  if (c >= 0x450 && c <= 0x45f) return c - 0x50;
  if (c >= 0xff41 && c <= 0xff5a) return c - 0x20;
  return c;
}

uint32_t to_lower_cp(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 0x20;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f) {
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x130) return 'i';
    if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17f) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 0x20;
  if (c == 0x386) return 0x3ac;
  if (c >= 0x388 && c <= 0x38a) return c + 0x25;
  if (c >= 0x410 && c <= 0x42f) return c + 0x20;
  if (c >= 0x400 && c <= 0x40f) return c + 0x50;
  if (c >= 0xff21 && c <= 0xff3a) return c + 0x20;
  return c;
}

void append_upper(std::string& out, uint32_t cp) {
  if (cp == 0xdf) {
    out += "SS";  // Python: 'ß'.upper() == 'SS'
    return;
  }
  append_utf8(out, to_upper_cp(cp));
}

}  // namespace

bool is_upper_cp(uint32_t cp) {
  return to_lower_cp(cp) != cp;
}
bool is_lower_cp(uint32_t cp) {
  return to_upper_cp(cp) != cp || cp == 0xdf;
}
bool is_alpha_cp(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  return is_upper_cp(cp) || is_lower_cp(cp) ||
         (cp >= 0xc0 && cp != 0xd7 && cp != 0xf7 && !is_space(cp) && !(cp >= 0x2000 && cp <= 0x2bff) &&
          !(cp >= 0x3000 && cp <= 0x303f));
}
bool is_digit_cp(uint32_t cp) {
  return cp >= '0' && cp <= '9';
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) append_upper(out, decode_at(s, i));
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) append_utf8(out, to_lower_cp(decode_at(s, i)));
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode_at(s, i);
    if (is_upper_cp(cp))
      append_utf8(out, to_lower_cp(cp));
    else
      append_upper(out, cp);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode_at(s, i);
    if (first)
      append_upper(out, cp);
    else
      append_utf8(out, to_lower_cp(cp));
    first = false;
  }
  return out;
}

std::string title(std::string_view s) {
  // Python str.title(): a cased letter after an uncased character starts a word.
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode_at(s, i);
    bool cased = is_upper_cp(cp) || is_lower_cp(cp);
    if (cased && !prev_cased)
      append_upper(out, cp);
    else if (cased)
      append_utf8(out, to_lower_cp(cp));
    else
      append_utf8(out, cp);
    prev_cased = cased;
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode_at(s, i);
    if (cp == static_cast<uint32_t>(q) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else {
      append_utf8(out, cp);
    }
  }
  out += q;
  return out;
}

}  // namespace ferrum::jinja::text
