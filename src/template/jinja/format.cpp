// Python string formatting: str % args (printf style) and str.format (a common subset of the
// format-spec mini-language).
#include "template/jinja/format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "template/jinja/error.h"
#include "template/jinja/ops.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

namespace {

struct Spec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char type = 0;
};

std::string pad(std::string s, const Spec& sp, bool numeric) {
  if (sp.width < 0) return s;
  size_t w = static_cast<size_t>(sp.width), n = text::cp_count(s);
  if (n >= w) return s;
  size_t fill = w - n;
  if (sp.flags.find('-') != std::string::npos) return s + std::string(fill, ' ');
  if (numeric && sp.flags.find('0') != std::string::npos) {
    size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    return s.substr(0, sign) + std::string(fill, '0') + s.substr(sign);
  }
  return std::string(fill, ' ') + s;
}

std::string format_one(const Value& v, const Spec& sp) {
  char t = sp.type;
  if (t == 's' || t == 'r' || t == 'a') {
    std::string s = t == 's' ? v.to_str() : v.repr();
    if (sp.precision >= 0) {
      auto off = text::cp_offsets(s);
      if (static_cast<size_t>(sp.precision) + 1 < off.size()) s.resize(off[sp.precision]);
    }
    return pad(s, sp, false);
  }
  if (!v.is_number()) raise_type_error("%{} format: a real number is required, not {}", t, v.type_name());
  std::string sign = sp.flags.find('+') != std::string::npos   ? "+"
                     : sp.flags.find(' ') != std::string::npos ? " "
                                                               : "";
  char buf[512];
  if (t == 'd' || t == 'i' || t == 'u' || t == 'x' || t == 'X' || t == 'o') {
    double d = v.as_double();
    int64_t iv = v.is_float() ? static_cast<int64_t>(std::trunc(d)) : v.as_int();
    const char* f = t == 'x' ? "%llx" : t == 'X' ? "%llX" : t == 'o' ? "%llo" : "%llu";
    uint64_t mag = iv < 0 ? static_cast<uint64_t>(-(iv + 1)) + 1 : static_cast<uint64_t>(iv);
    std::snprintf(buf, sizeof buf, f, static_cast<unsigned long long>(mag));
    std::string digits = buf;
    if (sp.precision > 0 && digits.size() < static_cast<size_t>(sp.precision))
      digits = std::string(sp.precision - digits.size(), '0') + digits;
    return pad((iv < 0 ? "-" : sign) + digits, sp, true);
  }
  if (t == 'f' || t == 'F' || t == 'e' || t == 'E' || t == 'g' || t == 'G') {
    std::string f = "%." + std::to_string(sp.precision < 0 ? 6 : sp.precision) + t;
    std::snprintf(buf, sizeof buf, f.c_str(), v.as_double());
    std::string s = buf;
    if (s[0] != '-') s = sign + s;
    return pad(s, sp, true);
  }
  if (t == 'c') {
    std::string s;
    text::append_utf8(s, static_cast<uint32_t>(v.as_int()));
    return pad(s, sp, false);
  }
  raise("ValueError", fmt::format("unsupported format character '{}'", t));
}

}  // namespace

std::string percent_format(const std::string& f, const Value& args) {
  std::vector<Value> list;
  // CPython: a non-tuple argument is the single value; a dict is also the %(name)s source, and
  // for any mapping-like argument (dict, list) unused arguments are not an error.
  const Value* mapping = args.is_mapping() ? &args : nullptr;
  const bool mapping_like = args.is_mapping() || (args.is_list() && !args.is_tuple()) || args.is_undefined();
  if (args.is_tuple())
    list = args.items();
  else
    list.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) raise("ValueError", "incomplete format");
    if (f[i] == '%') {
      out += '%';
      continue;
    }
    const Value* arg = nullptr;
    Value keyed;
    if (f[i] == '(') {
      size_t e = f.find(')', i);
      if (e == std::string::npos || !mapping) raise_type_error("format requires a mapping");
      keyed = get_item(*mapping, Value(f.substr(i + 1, e - i - 1)));
      if (keyed.is_undefined()) raise("KeyError", text::repr(f.substr(i + 1, e - i - 1)));
      arg = &keyed;
      i = e + 1;
    }
    Spec sp;
    while (i < f.size() && std::string("-+ #0").find(f[i]) != std::string::npos) sp.flags += f[i++];
    auto number = [&]() {
      int n = 0;
      bool any = false;
      while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
        n = std::min(n * 10 + (f[i++] - '0'), 100000);
        any = true;
      }
      return any ? n : -1;
    };
    sp.width = number();
    if (i < f.size() && f[i] == '.') {
      ++i;
      sp.precision = std::max(0, number());
    }
    if (i >= f.size()) raise("ValueError", "incomplete format");
    sp.type = f[i];
    if (!arg) {
      if (next >= list.size()) raise_type_error("not enough arguments for format string");
      arg = &list[next++];
    }
    out += format_one(*arg, sp);
  }
  if (!mapping_like && next < list.size())
    raise_type_error("not all arguments converted during string formatting");
  return out;
}

std::string str_format(const std::string& f, const CallArgs& args) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t e = f.find('}', i);
    if (e == std::string::npos) raise("ValueError", "Single '{' encountered in format string");
    std::string field = f.substr(i + 1, e - i - 1);
    i = e;
    std::string spec, conv;
    if (auto p = field.find(':'); p != std::string::npos) {
      spec = field.substr(p + 1);
      field.resize(p);
    }
    if (auto p = field.find('!'); p != std::string::npos) {
      conv = field.substr(p + 1);
      field.resize(p);
    }
    Value v;
    if (field.empty()) {
      if (auto_idx >= args.pos.size())
        raise("IndexError", "Replacement index out of range for positional args tuple");
      v = args.pos[auto_idx++];
    } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t k = std::stoul(field);
      if (k >= args.pos.size())
        raise("IndexError", "Replacement index out of range for positional args tuple");
      v = args.pos[k];
    } else {
      bool found = false;
      for (auto& [name, val] : args.kw)
        if (name == field) {
          v = val;
          found = true;
        }
      if (!found) raise("KeyError", text::repr(field));
    }
    std::string s = conv == "r" ? v.repr() : v.to_str();
    if (!spec.empty()) {
      // [[fill]align][sign][0][width][.precision][type]
      Spec sp;
      size_t k = 0;
      char fill = ' ', align = 0;
      if (spec.size() >= 2 && std::string("<>^").find(spec[1]) != std::string::npos) {
        fill = spec[0];
        align = spec[1];
        k = 2;
      } else if (!spec.empty() && std::string("<>^").find(spec[0]) != std::string::npos) {
        align = spec[0];
        k = 1;
      }
      if (k < spec.size() && (spec[k] == '+' || spec[k] == ' ' || spec[k] == '-')) sp.flags += spec[k++];
      if (k < spec.size() && spec[k] == '0') {
        sp.flags += '0';
        ++k;
      }
      int w = 0;
      bool any = false;
      while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k]))) {
        w = std::min(w * 10 + (spec[k++] - '0'), 100000);
        any = true;
      }
      if (k < spec.size() && spec[k] == '.') {
        ++k;
        sp.precision = 0;
        while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k])))
          sp.precision = std::min(sp.precision * 10 + (spec[k++] - '0'), 1000);
      }
      sp.type =
          k < spec.size() ? spec[k] : (v.is_number() && !v.is_bool() ? (v.is_float() ? 'g' : 'd') : 's');
      if (sp.type == 'g' && sp.precision < 0 && v.is_float()) {
        s = float_repr(v.as_double());
      } else {
        s = format_one(v, sp);
      }
      size_t n = text::cp_count(s);
      if (any && n < static_cast<size_t>(w)) {
        size_t padn = w - n;
        if (!align && sp.flags.find('0') != std::string::npos && v.is_number()) {
          // "0" without an alignment: zero padding after the sign
          size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
          s = s.substr(0, sign) + std::string(padn, '0') + s.substr(sign);
          out += s;
          continue;
        }
        if (!align) align = v.is_number() ? '>' : '<';
        if (align == '<')
          s += std::string(padn, fill);
        else if (align == '>')
          s = std::string(padn, fill) + s;
        else
          s = std::string(padn / 2, fill) + s + std::string(padn - padn / 2, fill);
      }
    }
    out += s;
  }
  return out;
}

}  // namespace ferrum::jinja
