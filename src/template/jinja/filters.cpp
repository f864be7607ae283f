// Jinja2 builtin filters (jinja2/filters.py semantics) plus Hugging Face's tojson.
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

Value f_tojson(const Value& v, CallArgs& a) {
  ArgBinder b(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = b.get_or(0, Value(false)).truthy();
  Value indent = b.get_or(1, Value(nullptr));
  if (indent.is_string()) {
    o.indent_is_string = true;
    o.indent_str = indent.str();
  } else if (indent.is_int() || indent.is_bool()) {
    o.indent = static_cast<int>(std::clamp<int64_t>(indent.as_int(), 0, 1000));
  } else if (!indent.is_none()) {
    raise_type_error("tojson: indent must be an int or str, not {}", indent.type_name());
  }
  if (o.indent >= 0 || o.indent_is_string) o.item_sep = ",";
  Value seps = b.get_or(2, Value(nullptr));
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.items().size() != 2 || !seps.items()[0].is_string() ||
        !seps.items()[1].is_string())
      raise_type_error("tojson: separators must be a (item_separator, key_separator) pair of strings");
    o.item_sep = seps.items()[0].str();
    o.key_sep = seps.items()[1].str();
  }
  o.sort_keys = b.get_or(3, Value(false)).truthy();
  return Value(to_json(v, o));
}

Value f_trim(const Value& v, CallArgs& a) {
  ArgBinder b(a, "trim", {"chars"});
  return same_kind(v, text::strip(soft_str(v), opt_str(b.get(0), "strip"), true, true));
}

Value f_length(const Value& v, CallArgs& a) {
  ArgBinder b(a, "length", {});
  return Value(length(v));
}

Value f_upper(const Value& v, CallArgs&) {
  return same_kind(v, text::upper(soft_str(v)));
}
Value f_lower(const Value& v, CallArgs&) {
  return same_kind(v, text::lower(soft_str(v)));
}
Value f_capitalize(const Value& v, CallArgs&) {
  return same_kind(v, text::capitalize(soft_str(v)));
}

Value f_title(const Value& v, CallArgs&) {
  // Jinja do_title: words start after runs of "-", whitespace, "(", "{", "[", "<".
  std::string s = soft_str(v), out;
  bool at_start = true;
  for (size_t i = 0; i < s.size();) {
    size_t b = i;
    uint32_t cp = text::decode_at(s, i);
    bool delim = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || text::is_space(cp);
    std::string ch = s.substr(b, i - b);
    if (delim) {
      out += ch;
      at_start = true;
    } else {
      out += at_start ? text::upper(ch) : text::lower(ch);
      at_start = false;
    }
  }
  return Value(out);
}

Value f_replace(const Value& v, CallArgs& a) {
  ArgBinder b(a, "replace", {"old", "new", "count"});
  if (!b.get(0) || !b.get(1)) raise_type_error("replace() missing required arguments 'old' and 'new'");
  int64_t count = -1;
  if (b.get(2) && !b.get(2)->is_none()) count = need_int(b.get(2), "count");
  return Value(text::replace(soft_str(v), soft_str(*b.get(0)), soft_str(*b.get(1)), count));
}

Value f_join(const Value& v, CallArgs& a) {
  ArgBinder b(a, "join", {"d", "attribute"});
  std::string sep = b.get(0) ? soft_str(*b.get(0)) : "";
  std::string out;
  bool first = true;
  for (auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += b.get(1) && !b.get(1)->is_none() ? soft_str(attr_path(item, soft_str(*b.get(1)))) : soft_str(item);
  }
  return Value(out);
}

Value f_first(const Value& v, CallArgs&) {
  if (v.is_generator()) {  // next(iter(gen)) takes one item
    auto& it = v.iter_obj();
    if (!it.error.empty()) raise("TypeError", it.error);
    if (it.pos < it.items.size()) return it.items[it.pos++];
    return Value::undefined("No first item, sequence was empty.");
  }
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(const Value& v, CallArgs&) {
  // jinja: next(iter(reversed(value)))
  if (!(v.is_undefined() || v.is_string() || v.is_list() || v.is_mapping() ||
        (v.is_iterator() && !v.is_generator())))
    raise_type_error("'{}' object is not reversible", v.type_name());
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_list(const Value& v, CallArgs&) {
  return Value::list(iterate(v));
}

Value f_string(const Value& v, CallArgs&) {
  return same_kind(v, soft_str(v));
}

std::optional<int64_t> parse_int(std::string s, int base) {
  s = text::strip(s, std::nullopt, true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
        std::isalnum(static_cast<unsigned char>(s[i + 1])))
      continue;
    digits += s[i];
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long r = std::strtoll(digits.c_str(), &end, base);
  if (errno || *end != 0 || std::isspace(static_cast<unsigned char>(digits[0]))) return std::nullopt;
  return r;
}

std::optional<double> parse_float(std::string s) {
  s = text::strip(s, std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (*end != 0) return std::nullopt;
  return d;
}

Value f_int(const Value& v, CallArgs& a) {
  ArgBinder b(a, "int", {"default", "base"});
  if (v.is_undefined()) fail_undefined(v);  // int(Undefined) raises
  Value def = b.get_or(0, Value(0));
  int base = static_cast<int>(b.get(1) ? need_int(b.get(1), "base") : 10);
  if (v.is_string()) {
    if (auto r = parse_int(v.str(), base)) return Value(*r);
    if (auto d = parse_float(v.str()); d && std::isfinite(*d)) return Value(static_cast<int64_t>(*d));
    return def;
  }
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float() && std::isfinite(v.as_double())) return Value(static_cast<int64_t>(v.as_double()));
  return def;
}

Value f_float(const Value& v, CallArgs& a) {
  ArgBinder b(a, "float", {"default"});
  if (v.is_undefined()) fail_undefined(v);  // float(Undefined) raises
  Value def = b.get_or(0, Value(0.0));
  if (v.is_string()) {
    if (auto d = parse_float(v.str())) return Value(*d);
    return def;
  }
  if (v.is_number()) return Value(v.as_double());
  return def;
}

Value f_default(const Value& v, CallArgs& a) {
  ArgBinder b(a, "default", {"default_value", "boolean"});
  bool boolean = b.get_or(1, Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return b.get_or(0, Value(""));
  return v;
}

Value f_items(const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::generator({}, "do_items");
  if (!v.is_mapping()) {
    Value g = Value::generator({}, "do_items");
    g.iter_obj().error = "Can only get item pairs from a mapping.";  // raised once iterated, as in Python
    return g;
  }
  return Value::generator(dict_items(v).items(), "do_items");
}

Value f_dictsort(const Value& v, CallArgs& a) {
  ArgBinder b(a, "dictsort", {"case_sensitive", "by", "reverse"});
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_mapping())
    raise("AttributeError", fmt::format("'{}' object has no attribute 'items'", v.type_name()));
  bool cs = b.get_or(0, Value(false)).truthy();
  std::string by = b.get_or(1, Value("key")).to_str();
  if (by != "key" && by != "value")
    raise("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
  bool rev = b.get_or(2, Value(false)).truthy();
  std::vector<Value> items = dict_items(v).items();
  size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    int c = compare_values(sort_key(x.items()[pos], cs), sort_key(y.items()[pos], cs));
    return rev ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

bool apply_test(const std::string& name, const Value& item, const std::vector<Value>& args) {
  TestFn t = find_test(name);
  if (!t) raise("TemplateRuntimeError", fmt::format("No test named '{}'.", name));
  CallArgs ca;
  ca.pos = args;
  return t(item, ca);
}

Value select_impl(const Value& v, CallArgs& a, bool attr, bool want) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::generator({}, "select_or_reject");  // jinja: "if value:"
  size_t first = 0;
  std::string attribute;
  if (attr) {
    if (a.pos.empty()) raise_type_error("selectattr/rejectattr need an attribute name");
    attribute = soft_str(a.pos[0]);
    first = 1;
  }
  std::string test;
  std::vector<Value> targs;
  if (a.pos.size() > first) {
    test = soft_str(a.pos[first]);
    targs.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
  }
  for (auto& item : iterate(v)) {
    Value x = attr ? attr_path(item, attribute) : item;
    bool ok = test.empty() ? x.truthy() : apply_test(test, x, targs);
    if (ok == want) out.push_back(item);
  }
  return Value::generator(std::move(out), "select_or_reject");
}

Value f_select(const Value& v, CallArgs& a) {
  return select_impl(v, a, false, true);
}
Value f_reject(const Value& v, CallArgs& a) {
  return select_impl(v, a, false, false);
}
Value f_selectattr(const Value& v, CallArgs& a) {
  return select_impl(v, a, true, true);
}
Value f_rejectattr(const Value& v, CallArgs& a) {
  return select_impl(v, a, true, false);
}

Value f_map(const Value& v, CallArgs& a) {
  std::vector<Value> out;
  if (!v.truthy()) return Value::generator({}, "sync_do_map");  // jinja: "if value:"
  const Value* attribute = nullptr;
  const Value* def = nullptr;
  for (auto& [k, val] : a.kw) {
    if (k == "attribute")
      attribute = &val;
    else if (k == "default")
      def = &val;
  }
  if (attribute) {
    for (auto& item : iterate(v)) {
      Value x = attr_path(item, soft_str(*attribute));
      if (x.is_undefined() && def) x = *def;
      out.push_back(x);
    }
    return Value::generator(std::move(out), "sync_do_map");
  }
  if (a.pos.empty()) raise("FilterArgumentError", "map requires a filter argument");
  std::string fname = soft_str(a.pos[0]);
  FilterFn f = find_filter(fname);
  if (!f) raise("TemplateRuntimeError", fmt::format("No filter named '{}'.", fname));
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (auto& item : iterate(v)) {
    CallArgs c = rest;
    out.push_back(f(item, c));
  }
  return Value::generator(std::move(out), "sync_do_map");
}

Value f_unique(const Value& v, CallArgs& a) {
  ArgBinder b(a, "unique", {"case_sensitive", "attribute"});
  bool cs = b.get_or(0, Value(false)).truthy();
  std::vector<Value> out, keys;
  for (auto& item : iterate(v)) {
    Value k = sort_key(b.get(1) && !b.get(1)->is_none() ? attr_path(item, soft_str(*b.get(1))) : item, cs);
    if (std::any_of(keys.begin(), keys.end(), [&](const Value& x) { return x.equals(k); })) continue;
    keys.push_back(k);
    out.push_back(item);
  }
  return Value::generator(std::move(out), "sync_do_unique");
}

Value f_reverse(const Value& v, CallArgs&) {
  // jinja do_reverse: strings are sliced, other sequences give Python's reversed() iterator,
  // generators are listed and reversed.
  if (v.is_string()) return get_slice(v, std::nullopt, std::nullopt, -1);
  if (!(v.is_undefined() || v.is_list() || v.is_mapping() || v.is_iterator()))
    raise("FilterArgumentError", "argument must be iterable");
  bool gen = v.is_generator();
  std::string type = v.is_list()       ? (v.is_tuple() ? "reversed" : "list_reverseiterator")
                     : v.is_mapping()  ? "dict_reversekeyiterator"
                     : v.is_iterator() ? "dict_reverseiterator"
                                       : "reversed";
  std::vector<Value> items;
  try {
    items = iterate(v);
  } catch (const Raise& r) {
    if (r.type == "TypeError") raise("FilterArgumentError", "argument must be iterable");
    throw;
  }
  std::reverse(items.begin(), items.end());
  if (gen) return Value::list(std::move(items));
  return Value::generator(std::move(items), "", type);
}

Value f_sort(const Value& v, CallArgs& a) {
  ArgBinder b(a, "sort", {"reverse", "case_sensitive", "attribute"});
  bool rev = b.get_or(0, Value(false)).truthy();
  bool cs = b.get_or(1, Value(false)).truthy();
  auto items = iterate(v);
  const Value* attr = b.get(2) && !b.get(2)->is_none() ? b.get(2) : nullptr;
  auto key = [&](const Value& x) { return sort_key(attr ? attr_path(x, soft_str(*attr)) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    int c = compare_values(key(x), key(y));
    return rev ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value minmax(const Value& v, CallArgs& a, bool want_max) {
  ArgBinder b(a, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  bool cs = b.get_or(0, Value(false)).truthy();
  const Value* attr = b.get(1) && !b.get(1)->is_none() ? b.get(1) : nullptr;
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return sort_key(attr ? attr_path(x, soft_str(*attr)) : x, cs); };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    int c = compare_values(key(items[i]), key(items[best]), want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

Value f_min(const Value& v, CallArgs& a) {
  return minmax(v, a, false);
}
Value f_max(const Value& v, CallArgs& a) {
  return minmax(v, a, true);
}

Value f_sum(const Value& v, CallArgs& a) {
  ArgBinder b(a, "sum", {"attribute", "start"});
  Value acc = b.get_or(1, Value(0));
  const Value* attr = b.get(0) && !b.get(0)->is_none() ? b.get(0) : nullptr;
  for (auto& item : iterate(v)) acc = binary_op("+", acc, attr ? attr_path(item, soft_str(*attr)) : item);
  return acc;
}

Value f_safe(const Value& v, CallArgs&) {
  return Value::markup(soft_str(v));
}

Value f_indent(const Value& v, CallArgs& a) {
  ArgBinder b(a, "indent", {"width", "first", "blank"});
  // jinja does `s += "\n"` before anything else
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_list() && !v.is_tuple()) raise("AttributeError", "'list' object has no attribute 'splitlines'");
  if (v.is_tuple()) raise_type_error("can only concatenate tuple (not \"str\") to tuple");
  if (!v.is_string()) raise_type_error("unsupported operand type(s) for +=: '{}' and 'str'", v.type_name());
  Value w = b.get_or(0, Value(4));
  std::string ind =
      w.is_string()
          ? w.str()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(need_int(&w, "width"), 0, 1000)), ' ');
  bool first = b.get_or(1, Value(false)).truthy();
  bool blank = b.get_or(2, Value(false)).truthy();
  std::string s = soft_str(v) + "\n";
  auto lines = text::splitlines(s, false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind) + lines[i];
  }
  if (first) rv = ind + rv;
  return Value(rv);
}

bool is_word_cp(uint32_t cp) {
  return cp == '_' || text::is_digit_cp(cp) || text::is_alpha_cp(cp);
}

Value f_wordcount(const Value& v, CallArgs&) {
  std::string s = soft_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    bool w = is_word_cp(text::decode_at(s, i));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Value f_abs(const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) return v.as_int() < 0 ? negate(v) : Value(v.as_int());
  raise_type_error("bad operand type for abs(): '{}'", v.type_name());
}

Value f_round(const Value& v, CallArgs& a) {
  ArgBinder b(a, "round", {"precision", "method"});
  int64_t prec = b.get(0) ? need_int(b.get(0), "precision") : 0;
  std::string method = b.get_or(1, Value("common")).to_str();
  if (method != "common" && method != "ceil" && method != "floor")
    raise("FilterArgumentError", "method must be common, ceil or floor");
  if (!v.is_number()) raise_type_error("type {} doesn't define __round__ method", v.type_name());
  if (method == "common" && !v.is_float()) return Value(v.as_int());
  double x = v.as_double();
  if (method == "common" && prec >= 0 && prec <= 300 && std::isfinite(x)) {
    // Python round(): correctly rounded decimal, ties to even on the exact binary value; glibc's
    // printf does the same conversion.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(prec), x);
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(prec));
  double y = x * scale;
  double r = method == "ceil" ? std::ceil(y) : method == "floor" ? std::floor(y) : std::nearbyint(y);
  return Value(r / scale);
}

Value f_batch(const Value& v, CallArgs& a) {
  ArgBinder b(a, "batch", {"linecount", "fill_with"});
  int64_t n = need_int(b.get(0), "linecount");
  if (n <= 0) raise("FilterArgumentError", "batch size must be positive");
  std::vector<Value> out, cur;
  for (auto& item : iterate(v)) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (b.get(1) && !b.get(1)->is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*b.get(1));
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::generator(std::move(out), "do_batch");
}

Value f_slice(const Value& v, CallArgs& a) {
  ArgBinder b(a, "slice", {"slices", "fill_with"});
  int64_t slices = need_int(b.get(0), "slices");
  if (slices <= 0 || slices > 100000) raise("ValueError", "slice count must be between 1 and 100000");
  auto seq = iterate(v);
  int64_t length = static_cast<int64_t>(seq.size());
  int64_t per = length / slices, extra = length % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    int64_t start = offset + k * per;
    if (k < extra) ++offset;
    int64_t end = offset + (k + 1) * per;
    std::vector<Value> part(seq.begin() + start, seq.begin() + end);
    if (b.get(1) && !b.get(1)->is_none() && k >= extra) part.push_back(*b.get(1));
    out.push_back(Value::list(std::move(part)));
  }
  return Value::generator(std::move(out), "sync_do_slice");
}

Value f_truncate(const Value& v, CallArgs& a) {
  ArgBinder b(a, "truncate", {"length", "killwords", "end", "leeway"});
  std::string s = soft_str(v);
  int64_t length = b.get(0) ? need_int(b.get(0), "length") : 255;
  bool killwords = b.get_or(1, Value(false)).truthy();
  std::string end = b.get(2) ? soft_str(*b.get(2)) : "...";
  int64_t leeway =
      b.get(3) && !b.get(3)->is_none() ? need_int(b.get(3), "leeway") : 5;  // truncate.leeway policy
  int64_t end_len = static_cast<int64_t>(text::cp_count(end));
  if (length < end_len)
    raise("AssertionError", fmt::format("expected length >= {}, got {}", end_len, length));
  if (leeway < 0) raise("AssertionError", fmt::format("expected leeway >= 0, got {}", leeway));
  auto off = text::cp_offsets(s);
  int64_t n = static_cast<int64_t>(off.size()) - 1;
  if (n <= length + leeway) return Value(s);
  std::string head = s.substr(0, off[static_cast<size_t>(length - end_len)]);
  if (killwords) return Value(head + end);
  size_t sp = head.rfind(' ');
  if (sp != std::string::npos) head.resize(sp);
  return Value(head + end);
}

Value f_escape(const Value& v, CallArgs&) {
  if (v.is_markup()) return v;
  return Value::markup(text::html_escape(soft_str(v)));
}

Value f_forceescape(const Value& v, CallArgs&) {
  return Value::markup(text::html_escape(soft_str(v)));
}

Value f_center(const Value& v, CallArgs& a) {
  ArgBinder b(a, "center", {"width"});
  std::string s = soft_str(v);
  int64_t w = b.get(0) ? need_int(b.get(0), "width") : 80;
  int64_t n = static_cast<int64_t>(text::cp_count(s));
  if (w <= n) return Value(s);
  int64_t total = w - n, left = total / 2 + (total & w & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(total - left), ' '));
}

Value f_format(const Value& v, CallArgs& a) {
  if (!a.kw.empty()) {
    Value d = Value::dict();
    for (auto& [k, val] : a.kw) d.dict_obj().set(k, val);
    return Value(percent_format(soft_str(v), d));
  }
  return Value(percent_format(soft_str(v), Value::list(a.pos, true)));
}

Value f_attr(const Value& v, CallArgs& a) {
  // Python getattr only: dict keys are not attributes (namespaces and loop fields are).
  ArgBinder b(a, "attr", {"name"});
  std::string name = soft_str(b.get_or(0, Value("")));
  if (v.is_mapping()) return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
  return get_attr(v, name);
}

Value f_pprint(const Value& v, CallArgs&) {
  return Value(v.repr());
}

// Filters that are Python generator functions fail lazily: an error inside them surfaces only
// when the result is iterated, so it is stored in the (empty) generator.
Value deferred(const char* origin, const Raise& r) {
  Value g = Value::generator({}, origin);
  g.iter_obj().error_type = r.type;
  g.iter_obj().error = r.message;
  return g;
}

#define LAZY(fn, origin)                     \
  [](const Value& v, CallArgs& a) -> Value { \
    try {                                    \
      return fn(v, a);                       \
    } catch (const Raise& r) {               \
      return deferred(origin, r);            \
    }                                        \
  }

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> m = {
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"length", f_length},
      {"count", f_length},
      {"upper", f_upper},
      {"lower", f_lower},
      {"title", f_title},
      {"capitalize", f_capitalize},
      {"replace", f_replace},
      {"join", f_join},
      {"first", f_first},
      {"last", f_last},
      {"list", f_list},
      {"string", f_string},
      {"int", f_int},
      {"float", f_float},
      {"default", f_default},
      {"d", f_default},
      {"items", f_items},
      {"dictsort", f_dictsort},
      {"select", LAZY(f_select, "select_or_reject")},
      {"reject", LAZY(f_reject, "select_or_reject")},
      {"map", LAZY(f_map, "sync_do_map")},
      {"selectattr", LAZY(f_selectattr, "select_or_reject")},
      {"rejectattr", LAZY(f_rejectattr, "select_or_reject")},
      {"unique", LAZY(f_unique, "sync_do_unique")},
      {"reverse", f_reverse},
      {"sort", f_sort},
      {"safe", f_safe},
      {"indent", f_indent},
      {"wordcount", f_wordcount},
      {"abs", f_abs},
      {"round", f_round},
      {"batch", LAZY(f_batch, "do_batch")},
      {"min", f_min},
      {"max", f_max},
      {"sum", f_sum},
      {"escape", f_escape},
      {"e", f_escape},
      {"forceescape", f_forceescape},
      {"center", f_center},
      {"format", f_format},
      {"attr", f_attr},
      {"slice", LAZY(f_slice, "sync_do_slice")},
      {"truncate", f_truncate},
      {"pprint", f_pprint},
  };
  return m;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

}  // namespace ferrum::jinja
