// Python methods of str, list, dict and loop values as templates call them
// ("s.strip()", "d.items()"), with the Immutable sandbox's refusal of mutating methods.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "template/jinja/builtins.h"
#include "template/jinja/builtins_util.h"
#include "template/jinja/error.h"
#include "template/jinja/format.h"
#include "template/jinja/ops.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

namespace {

// Code-point index of byte offset `b` in s.
int64_t cp_index(const std::string& s, size_t b) {
  return static_cast<int64_t>(text::cp_count(std::string_view(s).substr(0, b)));
}

// Applies optional Python start/end (code point indexes) to s, returning the byte range.
std::pair<size_t, size_t> sub_range(const std::string& s, const Value* start, const Value* end) {
  if ((!start || start->is_none()) && (!end || end->is_none())) return {0, s.size()};
  auto off = text::cp_offsets(s);
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  auto norm = [&](const Value* v, int64_t def) {
    if (!v || v->is_none()) return def;
    int64_t i = need_int(v, "slice index");
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  int64_t b = norm(start, 0), e = norm(end, n);
  if (e < b) e = b;
  return {off[b], off[e]};
}

bool affix_match(const Value& self, CallArgs& a, bool prefix) {
  ArgBinder b(a, prefix ? "startswith" : "endswith", {"prefix", "start", "end"});
  if (!b.get(0))
    raise_type_error("{}() takes at least 1 argument (0 given)", prefix ? "startswith" : "endswith");
  auto [lo, hi] = sub_range(self.str(), b.get(1), b.get(2));
  std::string_view s = std::string_view(self.str()).substr(lo, hi - lo);
  std::vector<Value> cands = b.get(0)->is_tuple() ? b.get(0)->items() : std::vector<Value>{*b.get(0)};
  for (auto& c : cands) {
    if (!c.is_string())
      raise_type_error("{} first arg must be str or a tuple of str, not {}",
                       prefix ? "startswith" : "endswith", c.type_name());
    const std::string& x = c.str();
    if (x.size() <= s.size() && (prefix ? s.substr(0, x.size()) == x : s.substr(s.size() - x.size()) == x))
      return true;
  }
  return false;
}

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

template <typename Pred>
Value all_cps(const std::string& s, Pred p) {
  if (s.empty()) return Value(false);
  for (size_t i = 0; i < s.size();)
    if (!p(text::decode_at(s, i))) return Value(false);
  return Value(true);
}

bool string_method(const Value& self, const std::string& name, CallArgs& a, Value& out) {
  const std::string& s = self.str();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(a, name, {"chars"});
    out = Value(text::strip(s, opt_str(b.get(0), name.c_str()), name != "rstrip", name != "lstrip"));
  } else if (name == "split" || name == "rsplit") {
    ArgBinder b(a, name, {"sep", "maxsplit"});
    auto sep = opt_str(b.get(0), name.c_str());
    if (sep && sep->empty()) raise("ValueError", "empty separator");
    int64_t maxsplit = b.get(1) ? need_int(b.get(1), "maxsplit") : -1;
    out = str_list(name == "split" ? text::split(s, sep, maxsplit) : text::rsplit(s, sep, maxsplit));
  } else if (name == "splitlines") {
    ArgBinder b(a, name, {"keepends"});
    out = str_list(text::splitlines(s, b.get_or(0, Value(false)).truthy()));
  } else if (name == "startswith" || name == "endswith") {
    out = Value(affix_match(self, a, name == "startswith"));
  } else if (name == "replace") {
    ArgBinder b(a, name, {"old", "new", "count"});
    if (!b.get(0) || !b.get(1)) raise_type_error("replace expected at least 2 arguments");
    out = Value(text::replace(s, need_str(*b.get(0), "replace() argument 1 "),
                              need_str(*b.get(1), "replace() argument 2 "),
                              b.get(2) ? need_int(b.get(2), "count") : -1));
  } else if (name == "upper") {
    out = Value(text::upper(s));
  } else if (name == "lower" || name == "casefold") {
    out = Value(text::lower(s));
  } else if (name == "title") {
    out = Value(text::title(s));
  } else if (name == "capitalize") {
    out = Value(text::capitalize(s));
  } else if (name == "swapcase") {
    out = Value(text::swapcase(s));
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    ArgBinder b(a, name, {"sub", "start", "end"});
    if (!b.get(0)) raise_type_error("{}() takes at least 1 argument (0 given)", name);
    const std::string& sub = need_str(*b.get(0), "");
    auto [lo, hi] = sub_range(s, b.get(1), b.get(2));
    std::string_view view = std::string_view(s).substr(0, hi);
    size_t f = name[0] == 'r' ? view.rfind(sub) : view.find(sub, lo);
    if (f != std::string_view::npos && f < lo) f = std::string_view::npos;
    if (f == std::string_view::npos) {
      if (name.find("index") != std::string::npos) raise("ValueError", "substring not found");
      out = Value(-1);
    } else {
      out = Value(cp_index(s, f));
    }
  } else if (name == "count") {
    ArgBinder b(a, name, {"sub", "start", "end"});
    if (!b.get(0)) raise_type_error("count() takes at least 1 argument (0 given)");
    auto [lo, hi] = sub_range(s, b.get(1), b.get(2));
    out = Value(text::count(std::string_view(s).substr(lo, hi - lo), need_str(*b.get(0), "")));
  } else if (name == "join") {
    ArgBinder b(a, name, {"iterable"});
    if (!b.get(0)) raise_type_error("join() takes exactly one argument (0 given)");
    std::string r;
    bool first = true;
    for (auto& item : iterate(*b.get(0))) {
      if (!item.is_string())
        raise_type_error("sequence item: expected str instance, {} found", item.type_name());
      if (!first) r += s;
      first = false;
      r += item.str();
    }
    out = Value(r);
  } else if (name == "format") {
    out = Value(str_format(s, a));
  } else if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    out = all_cps(s, text::is_digit_cp);
  } else if (name == "isalpha") {
    out = all_cps(s, text::is_alpha_cp);
  } else if (name == "isalnum") {
    out = all_cps(s, [](uint32_t c) { return text::is_alpha_cp(c) || text::is_digit_cp(c); });
  } else if (name == "isspace") {
    out = all_cps(s, text::is_space);
  } else if (name == "isupper" || name == "islower") {
    bool any_cased = false, ok = true;
    for (size_t i = 0; i < s.size();) {
      uint32_t c = text::decode_at(s, i);
      bool up = text::is_upper_cp(c), lo = text::is_lower_cp(c);
      any_cased |= up || lo;
      if (name == "isupper" ? lo : up) ok = false;
    }
    out = Value(ok && any_cased);
  } else if (name == "zfill") {
    ArgBinder b(a, name, {"width"});
    int64_t w = need_int(b.get(0), "width");
    int64_t n = static_cast<int64_t>(text::cp_count(s));
    std::string r = s;
    if (w > n) {
      size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
      r = s.substr(0, sign) + std::string(static_cast<size_t>(std::min<int64_t>(w - n, 1 << 20)), '0') +
          s.substr(sign);
    }
    out = Value(r);
  } else if (name == "center" || name == "ljust" || name == "rjust") {
    ArgBinder b(a, name, {"width", "fillchar"});
    int64_t w = std::min<int64_t>(need_int(b.get(0), "width"), 1 << 20);
    std::string fill = b.get(1) ? need_str(*b.get(1), "fillchar ") : " ";
    int64_t n = static_cast<int64_t>(text::cp_count(s));
    std::string r = s;
    if (w > n) {
      int64_t total = w - n;
      int64_t left = name == "ljust" ? 0 : name == "rjust" ? total : total / 2 + (total & w & 1);
      std::string l, rr;
      for (int64_t i = 0; i < left; ++i) l += fill;
      for (int64_t i = 0; i < total - left; ++i) rr += fill;
      r = l + s + rr;
    }
    out = Value(r);
  } else if (name == "partition" || name == "rpartition") {
    ArgBinder b(a, name, {"sep"});
    if (!b.get(0)) raise_type_error("{}() takes exactly one argument (0 given)", name);
    const std::string& sep = need_str(*b.get(0), "sep ");
    if (sep.empty()) raise("ValueError", "empty separator");
    size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (f == std::string::npos) {
      out = name == "partition" ? Value::list({Value(s), Value(""), Value("")}, true)
                                : Value::list({Value(""), Value(""), Value(s)}, true);
    } else {
      out = Value::list({Value(s.substr(0, f)), Value(sep), Value(s.substr(f + sep.size()))}, true);
    }
  } else if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder b(a, name, {"affix"});
    if (!b.get(0)) raise_type_error("{}() takes exactly one argument (0 given)", name);
    const std::string& x = need_str(*b.get(0), "argument ");
    std::string r = s;
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) r = s.substr(x.size());
    if (name == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0)
      r = s.substr(0, s.size() - x.size());
    out = Value(r);
  } else {
    return false;
  }
  return true;
}

[[noreturn]] void unsafe(const Value& self, const std::string& name) {
  // Hugging Face renders in jinja2's ImmutableSandboxedEnvironment, which forbids mutating
  // lists and dicts through their methods.
  raise("SecurityError",
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, self.type_name()));
}

bool dict_method(const Value& self, const std::string& name, CallArgs& a, Value& out) {
  auto& d = self.dict_obj();
  if (name == "items") {
    ArgBinder b(a, name, {});
    out = Value::view(dict_items(self).items(), "dict_items");
  } else if (name == "keys") {
    ArgBinder b(a, name, {});
    std::vector<Value> keys;
    for (auto& [k, _] : d.items) keys.push_back(k);
    out = Value::view(std::move(keys), "dict_keys");
  } else if (name == "values") {
    ArgBinder b(a, name, {});
    std::vector<Value> vals;
    for (auto& [_, v] : d.items) vals.push_back(v);
    out = Value::view(std::move(vals), "dict_values");
  } else if (name == "get") {
    ArgBinder b(a, name, {"key", "default"});
    if (!b.get(0)) raise_type_error("get expected at least 1 argument, got 0");
    const Value* v = d.find_key(*b.get(0));
    out = v ? *v : b.get_or(1, Value(nullptr));
  } else if (name == "copy") {
    Value c = Value::dict();
    c.dict_obj().items = d.items;
    out = c;
  } else if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" ||
             name == "clear") {
    unsafe(self, name);
  } else {
    return false;
  }
  return true;
}

bool list_method(const Value& self, const std::string& name, CallArgs& a, Value& out) {
  auto& items = self.items();
  if (name == "index") {
    ArgBinder b(a, name, {"value"});
    if (!b.get(0)) raise_type_error("index expected 1 argument, got 0");
    for (size_t i = 0; i < items.size(); ++i)
      if (items[i].equals(*b.get(0))) {
        out = Value(static_cast<int64_t>(i));
        return true;
      }
    raise("ValueError", fmt::format("{} is not in list", b.get(0)->repr()));
  } else if (name == "count") {
    ArgBinder b(a, name, {"value"});
    if (!b.get(0)) raise_type_error("count() takes exactly one argument (0 given)");
    out = Value(static_cast<int64_t>(
        std::count_if(items.begin(), items.end(), [&](const Value& x) { return x.equals(*b.get(0)); })));
  } else if (name == "copy" && !self.is_tuple()) {
    out = Value::list(items);
  } else if (!self.is_tuple() &&
             (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
              name == "clear" || name == "sort" || name == "reverse")) {
    unsafe(self, name);
  } else {
    return false;
  }
  return true;
}

bool loop_method(const Value& self, const std::string& name, CallArgs& a, Value& out) {
  if (name != "cycle") return false;
  if (a.pos.empty()) raise_type_error("no items for cycling given");
  const Value* idx = self.dict_obj().find("index0");
  out = a.pos[static_cast<size_t>(idx->as_int()) % a.pos.size()];
  return true;
}

// Markup methods: arguments are escaped first and str results stay Markup (markupsafe).
bool markup_method(const Value& self, const std::string& name, CallArgs& args, Value& out) {
  static const char* keep[] = {"strip",        "lstrip",      "rstrip",     "upper",     "lower",
                               "title",        "capitalize",  "swapcase",   "center",    "ljust",
                               "rjust",        "zfill",       "replace",    "join",      "format",
                               "split",        "rsplit",      "splitlines", "partition", "rpartition",
                               "removeprefix", "removesuffix"};
  auto esc = [](const Value& x) {
    if (x.is_markup() || x.is_number() || x.is_none()) return x;
    return Value::markup(text::html_escape(x.to_str()));
  };
  CallArgs a = args;
  if (name == "replace" || name == "format") {
    for (auto& x : a.pos) x = x.is_string() || name == "format" ? esc(x) : x;
    for (auto& kv : a.kw) kv.second = kv.second.is_string() || name == "format" ? esc(kv.second) : kv.second;
  } else if (name == "join" && !a.pos.empty()) {
    std::vector<Value> items;
    for (auto& x : iterate(a.pos[0])) items.push_back(esc(x));
    a.pos[0] = Value::list(std::move(items));
  }
  if (!string_method(self, name, a, out)) return false;
  if (std::find_if(std::begin(keep), std::end(keep), [&](const char* k) { return name == k; }) ==
      std::end(keep))
    return true;
  if (out.is_string()) {
    out = Value::markup(out.str());
  } else if (out.is_list()) {
    for (auto& x : out.items())
      if (x.is_string()) x = Value::markup(x.str());
  }
  return true;
}

}  // namespace

bool call_method(const Value& obj, const std::string& name, CallArgs& args, Value& out) {
  if (obj.is_markup()) return markup_method(obj, name, args, out);
  if (obj.is_string()) return string_method(obj, name, args, out);
  if (obj.is_list()) return list_method(obj, name, args, out);
  if (obj.is_mapping()) return dict_method(obj, name, args, out);
  if (obj.is_dict() && obj.dict_obj().tag == DictObj::Tag::Loop) return loop_method(obj, name, args, out);
  return false;
}

}  // namespace ferrum::jinja
