#include "tokenizer/jinja/builtins.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/ops.h"
#include "tokenizer/jinja/text.h"

namespace ferrum::jinja {

ArgBinder::ArgBinder(const CallArgs& args, const std::string& fname, std::initializer_list<const char*> names,
                     bool allow_extra_positional) {
  std::vector<const char*> nv(names);
  bound_.assign(nv.size(), nullptr);
  for (size_t i = 0; i < args.pos.size(); ++i) {
    if (i < nv.size()) {
      bound_[i] = &args.pos[i];
    } else if (allow_extra_positional) {
      extra_.push_back(&args.pos[i]);
    } else {
      raise_type_error("{}() takes at most {} positional argument(s) ({} given)", fname, nv.size(),
                       args.pos.size());
    }
  }
  for (auto& [k, v] : args.kw) {
    auto it = std::find_if(nv.begin(), nv.end(), [&](const char* n) { return k == n; });
    if (it == nv.end()) raise_type_error("{}() got an unexpected keyword argument '{}'", fname, k);
    size_t i = static_cast<size_t>(it - nv.begin());
    if (bound_[i]) raise_type_error("{}() got multiple values for argument '{}'", fname, k);
    bound_[i] = &v;
  }
}

namespace {

std::string soft_str(const Value& v) {
  return v.to_str();
}

std::optional<std::string> opt_str(const Value* v, const char* fname) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) raise_type_error("{} arg must be None or str, not {}", fname, v->type_name());
  return v->str();
}

int64_t need_int(const Value* v, const char* what) {
  if (!v || !(v->is_int() || v->is_bool())) {
    raise_type_error("'{}' object cannot be interpreted as an integer ({})", v ? v->type_name() : "NoneType",
                     what);
  }
  return v->as_int();
}

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) raise_type_error("{} must be str, not {}", what, v.type_name());
  return v.str();
}

// Jinja make_attrgetter: "a.b.0" -> nested getitem.
Value attr_path(const Value& obj, const std::string& path) {
  Value cur = obj;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (cur.is_undefined()) return cur;
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(text::lower(v.str()));
  return v;
}

// ---- filters ----

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

// soft_str keeps a Markup a Markup, and Markup's str methods return Markup.
Value same_kind(const Value& v, std::string s) {
  return v.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
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
  if (v.is_generator()) raise_type_error("'{}' object is not reversible", v.type_name());
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

Value dict_items(const Value& v) {
  std::vector<Value> out;
  for (auto& [k, val] : v.dict_obj().items) out.push_back(Value::list({k, val}, true));
  return Value::list(std::move(out));
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
  if (!v.is_mapping()) raise_type_error("dictsort: expected a mapping, got {}", v.type_name());
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
  if (!v.truthy()) return Value::generator({}, "do_map");  // jinja: "if value:"
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
    return Value::generator(std::move(out), "do_map");
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
  return Value::generator(std::move(out), "do_map");
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
  return Value::generator(std::move(out), "do_unique");
}

Value f_reverse(const Value& v, CallArgs&) {
  // jinja do_reverse: strings are sliced, other sequences give Python's reversed() iterator,
  // generators are listed and reversed.
  if (v.is_string()) return get_slice(v, std::nullopt, std::nullopt, -1);
  bool gen = v.is_generator();
  std::string type = v.is_list()       ? (v.is_tuple() ? "reversed" : "list_reverseiterator")
                     : v.is_mapping()  ? "dict_reversekeyiterator"
                     : v.is_iterator() ? "dict_reverseiterator"
                                       : "reversed";
  auto items = iterate(v);
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
    int c = compare_values(key(items[i]), key(items[best]));
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
  return Value::generator(std::move(out), "do_slice");
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
      {"select", f_select},
      {"reject", f_reject},
      {"map", f_map},
      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr},
      {"unique", f_unique},
      {"reverse", f_reverse},
      {"sort", f_sort},
      {"safe", f_safe},
      {"indent", f_indent},
      {"wordcount", f_wordcount},
      {"abs", f_abs},
      {"round", f_round},
      {"batch", f_batch},
      {"min", f_min},
      {"max", f_max},
      {"sum", f_sum},
      {"escape", f_escape},
      {"e", f_escape},
      {"forceescape", f_forceescape},
      {"center", f_center},
      {"format", f_format},
      {"attr", f_attr},
      {"slice", f_slice},
      {"truncate", f_truncate},
      {"pprint", f_pprint},
  };
  return m;
}

// ---- tests ----

bool t_defined(const Value& v, CallArgs&) {
  return !v.is_undefined();
}
bool t_undefined(const Value& v, CallArgs&) {
  return v.is_undefined();
}
bool t_none(const Value& v, CallArgs&) {
  return v.is_none();
}
bool t_boolean(const Value& v, CallArgs&) {
  return v.is_bool();
}
bool t_false(const Value& v, CallArgs&) {
  return v.is_bool() && !v.as_bool();
}
bool t_true(const Value& v, CallArgs&) {
  return v.is_bool() && v.as_bool();
}
bool t_integer(const Value& v, CallArgs&) {
  return v.is_int();
}
bool t_float(const Value& v, CallArgs&) {
  return v.is_float();
}
bool t_number(const Value& v, CallArgs&) {
  return v.is_number();
}
bool t_string(const Value& v, CallArgs&) {
  return v.is_string();
}
bool t_mapping(const Value& v, CallArgs&) {
  return v.is_mapping();
}
bool t_iterable(const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_list() || v.is_string() || v.is_mapping() || v.is_iterator();
}
// Jinja's Undefined has __len__ and __getitem__, so it passes the sequence test too.
bool t_sequence(const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_list() || v.is_string() || v.is_mapping();
}
bool t_callable(const Value& v, CallArgs&) {
  return v.is_function();
}
bool t_even(const Value& v, CallArgs&) {
  return binary_op("%", v, Value(2)).equals(Value(0));
}
bool t_odd(const Value& v, CallArgs&) {
  return binary_op("%", v, Value(2)).equals(Value(1));
}
bool t_divisibleby(const Value& v, CallArgs& a) {
  ArgBinder b(a, "divisibleby", {"num"});
  return binary_op("%", v, b.get_or(0, Value(1))).equals(Value(0));
}
const Value& one_arg(CallArgs& a, const char* name) {
  if (a.pos.size() != 1 || !a.kw.empty()) raise_type_error("test '{}' takes exactly one argument", name);
  return a.pos[0];
}
bool t_eq(const Value& v, CallArgs& a) {
  return v.equals(one_arg(a, "eq"));
}
bool t_ne(const Value& v, CallArgs& a) {
  return !v.equals(one_arg(a, "ne"));
}
bool t_lt(const Value& v, CallArgs& a) {
  return compare_order("<", v, one_arg(a, "lt"));
}
bool t_le(const Value& v, CallArgs& a) {
  return compare_order("<=", v, one_arg(a, "le"));
}
bool t_gt(const Value& v, CallArgs& a) {
  return compare_order(">", v, one_arg(a, "gt"));
}
bool t_ge(const Value& v, CallArgs& a) {
  return compare_order(">=", v, one_arg(a, "ge"));
}
bool t_in(const Value& v, CallArgs& a) {
  return contains(one_arg(a, "in"), v);
}
bool t_sameas(const Value& v, CallArgs& a) {
  const Value& o = one_arg(a, "sameas");
  if (v.kind() != o.kind()) return false;
  if (v.is_list()) return &v.list_obj() == &o.list_obj();
  if (v.is_dict()) return &v.dict_obj() == &o.dict_obj();
  return v.equals(o);
}
bool t_lower(const Value& v, CallArgs&) {
  std::string s = soft_str(v);
  return text::lower(s) == s && text::upper(s) != s;
}
bool t_upper(const Value& v, CallArgs&) {
  std::string s = soft_str(v);
  return text::upper(s) == s && text::lower(s) != s;
}
bool t_escaped(const Value&, CallArgs&) {
  return false;
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> m = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"callable", t_callable},
      {"even", t_even},
      {"odd", t_odd},
      {"divisibleby", t_divisibleby},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"==", t_eq},
      {"ne", t_ne},
      {"!=", t_ne},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<", t_lt},
      {"le", t_le},
      {"<=", t_le},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">", t_gt},
      {"ge", t_ge},
      {">=", t_ge},
      {"in", t_in},
      {"sameas", t_sameas},
      {"lower", t_lower},
      {"upper", t_upper},
      {"escaped", t_escaped},
  };
  return m;
}

// ---- methods ----

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
    out = Value(text::replace(s, need_str(*b.get(0), "replace() argument 1"),
                              need_str(*b.get(1), "replace() argument 2"),
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
    const std::string& sub = need_str(*b.get(0), "must be str");
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
    out = Value(text::count(std::string_view(s).substr(lo, hi - lo), need_str(*b.get(0), "must be str")));
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
    std::string fill = b.get(1) ? need_str(*b.get(1), "fillchar") : " ";
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
    const std::string& sep = need_str(*b.get(0), "sep");
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
    const std::string& x = need_str(*b.get(0), "argument");
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

Value g_range(CallArgs& a) {
  if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3)
    raise_type_error("range expected 1 to 3 integer arguments");
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) {
    stop = need_int(&a.pos[0], "range");
  } else {
    start = need_int(&a.pos[0], "range");
    stop = need_int(&a.pos[1], "range");
    if (a.pos.size() == 3) step = need_int(&a.pos[2], "range");
  }
  if (step == 0) raise("ValueError", "range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    // jinja2.sandbox.MAX_RANGE
    if (out.size() >= 100000)
      raise("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

Value make_dict(CallArgs& a, DictObj::Tag tag) {
  Value d = Value::dict(tag);
  if (a.pos.size() > 1) raise_type_error("expected at most 1 positional argument, got {}", a.pos.size());
  if (!a.pos.empty()) {
    const Value& init = a.pos[0];
    if (init.is_dict()) {
      for (auto& [k, v] : init.dict_obj().items) d.dict_obj().set_key(k, v);
    } else {
      for (auto& pair : iterate(init)) {
        if (!pair.is_list() || pair.items().size() != 2)
          raise_type_error("dictionary update sequence element must be a (key, value) pair");
        d.dict_obj().set_key(pair.items()[0], pair.items()[1]);
      }
    }
  }
  for (auto& [k, v] : a.kw) d.dict_obj().set(k, v);
  return d;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

TestFn find_test(const std::string& name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : it->second;
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

bool call_method(const Value& obj, const std::string& name, CallArgs& args, Value& out) {
  if (obj.is_markup()) return markup_method(obj, name, args, out);
  if (obj.is_string()) return string_method(obj, name, args, out);
  if (obj.is_list()) return list_method(obj, name, args, out);
  if (obj.is_mapping()) return dict_method(obj, name, args, out);
  if (obj.is_dict() && obj.dict_obj().tag == DictObj::Tag::Loop) return loop_method(obj, name, args, out);
  return false;
}

Value call_value(const Value& fn, CallArgs& args) {
  if (fn.is_function()) return fn.func().fn(args);
  if (fn.is_dict() && fn.dict_obj().tag == DictObj::Tag::Loop) {  // loop(children) in a recursive for
    if (const Value* f = fn.dict_obj().find("__call__")) return f->func().fn(args);
    raise_type_error("'LoopContext' object is not callable");
  }
  if (fn.is_undefined()) fail_undefined(fn);
  raise_type_error("'{}' object is not callable", fn.type_name());
}

void add_default_globals(DictObj& g) {
  g.set("range", Value::function("range", g_range));
  g.set("namespace",
        Value::function("namespace", [](CallArgs& a) { return make_dict(a, DictObj::Tag::Namespace); }));
  g.set("dict", Value::function("dict", [](CallArgs& a) { return make_dict(a, DictObj::Tag::Plain); }));
  g.set("joiner", Value::function("joiner", [](CallArgs& a) {
          ArgBinder b(a, "joiner", {"sep"});
          std::string sep = b.get(0) ? b.get(0)->to_str() : ", ";
          auto used = std::make_shared<bool>(false);
          return Value::function("joiner", [sep, used](CallArgs&) {
            if (!*used) {
              *used = true;
              return Value("");
            }
            return Value(sep);
          });
        }));
}

}  // namespace ferrum::jinja
