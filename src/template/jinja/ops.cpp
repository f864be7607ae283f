#include "template/jinja/ops.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "template/jinja/error.h"
#include "template/jinja/format.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

namespace {

constexpr size_t kMaxRepeat = size_t{64} << 20;  // refuse string/list repetition beyond 64 Mi items

// Jinja's object_type_repr: "dict object", "None".
std::string object_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  if (obj.is_markup()) return "markupsafe.Markup object";
  if (obj.is_namespace()) return "jinja2.utils.Namespace object";
  if (obj.is_dict() && obj.dict_obj().tag == DictObj::Tag::Loop) return "jinja2.runtime.LoopContext object";
  return obj.type_name() + " object";
}

// Messages of jinja2.Undefined._undefined_message.
Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined(
      fmt::format("{} has no attribute {}", text::repr(object_repr(obj)), text::repr(name)));
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attr(obj, key.str());
  return Value::undefined(fmt::format("{} has no element {}", object_repr(obj), key.repr()));
}

bool hashable(const Value& key) {
  if (key.is_tuple()) {
    for (auto& e : key.items())
      if (!hashable(e)) return false;
    return true;
  }
  return !(key.is_list() || key.is_dict() || key.is_iterator());
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  raise_type_error("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

bool is_intlike(const Value& v) {
  return v.is_int() || v.is_bool();
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::vector<size_t> slice_indices(int64_t len, const std::optional<int64_t>& start_in,
                                  const std::optional<int64_t>& stop_in,
                                  const std::optional<int64_t>& step_in) {
  int64_t step = step_in.value_or(1);
  if (step == 0) raise("ValueError", "slice step cannot be zero");
  int64_t start, stop;
  if (step > 0) {
    start = start_in.value_or(0);
    stop = stop_in.value_or(len);
    if (start < 0) start = std::max<int64_t>(0, start + len);
    if (stop < 0) stop = std::max<int64_t>(0, stop + len);
    start = std::min(start, len);
    stop = std::min(stop, len);
  } else {
    start = start_in ? *start_in : len - 1;
    stop = stop_in ? *stop_in : -1 - len;
    if (start < 0) start += len;
    if (start < 0) start = -1;
    if (start >= len) start = len - 1;
    if (stop < 0) stop += len;
    if (stop < 0) stop = -1;
    if (stop >= len) stop = len - 1;
  }
  std::vector<size_t> idx;
  if (step > 0)
    for (int64_t i = start; i < stop; i += step) idx.push_back(static_cast<size_t>(i));
  else
    for (int64_t i = start; i > stop; i += step) idx.push_back(static_cast<size_t>(i));
  return idx;
}

}  // namespace

void fail_undefined(const Value& v) {
  const std::string& hint = v.is_undefined() ? v.undefined_hint() : std::string();
  raise("UndefinedError", hint.empty() ? "value is undefined" : hint);
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_obj().find(name)) return *v;
  }
  return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (hashable(key))
      if (const Value* v = obj.dict_obj().find_key(key)) return *v;
    return missing_item(obj, key);
  }
  if ((obj.is_list() || obj.is_string()) && is_intlike(key)) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return missing_item(obj, key);
      return obj.items()[static_cast<size_t>(i)];
    }
    auto off = text::cp_offsets(obj.str());
    int64_t n = static_cast<int64_t>(off.size()) - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return missing_item(obj, key);
    std::string ch = obj.str().substr(off[i], off[i + 1] - off[i]);
    return obj.is_markup() ? Value::markup(std::move(ch)) : Value(std::move(ch));
  }
  return missing_item(obj, key);
}

Value get_slice(const Value& obj, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                const std::optional<int64_t>& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_list()) {
    auto& items = obj.items();
    std::vector<Value> out;
    for (size_t i : slice_indices(static_cast<int64_t>(items.size()), start, stop, step))
      out.push_back(items[i]);
    return Value::list(std::move(out), obj.is_tuple());
  }
  if (obj.is_string()) {
    const std::string& s = obj.str();
    auto off = text::cp_offsets(s);
    std::string out;
    for (size_t i : slice_indices(static_cast<int64_t>(off.size()) - 1, start, stop, step))
      out.append(s, off[i], off[i + 1] - off[i]);
    return obj.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
  }
  // Jinja compiles slices to plain Python subscripts (no environment.getitem fallback).
  if (obj.is_mapping()) raise_type_error("unhashable type: 'slice'");
  raise_type_error("'{}' object is not subscriptable", obj.type_name());
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return v.items();
    case Value::Kind::Dict: {
      if (v.dict_obj().tag != DictObj::Tag::Plain) break;
      std::vector<Value> keys;
      for (auto& [k, _] : v.dict_obj().items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::Iterator: {
      auto& it = v.iter_obj();
      if (!it.error.empty()) raise(it.error_type, it.error);
      if (it.type == IterObj::Type::View) return it.items;
      std::vector<Value> rest(it.items.begin() + static_cast<long>(it.pos), it.items.end());
      it.pos = it.items.size();  // a generator is consumed by iterating it
      return rest;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      for (size_t i = 0; i < s.size();) {
        size_t b = i;
        text::decode_at(s, i);
        chars.emplace_back(s.substr(b, i - b));
      }
      return chars;
    }
    default:
      break;
  }
  raise_type_error("'{}' object is not iterable", v.type_name());
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return static_cast<int64_t>(text::cp_count(v.str()));
    case Value::Kind::List:
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::Dict:
      if (v.dict_obj().tag == DictObj::Tag::Plain) return static_cast<int64_t>(v.dict_obj().items.size());
      break;
    case Value::Kind::Iterator:
      if (v.iter_obj().type == IterObj::Type::View) return static_cast<int64_t>(v.iter_obj().items.size());
      break;
    default:
      break;
  }
  raise_type_error("object of type '{}' has no len()", v.type_name());
}

bool contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::String:
      if (!item.is_string())
        raise_type_error("'in <string>' requires string as left operand, not {}", item.type_name());
      return c.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      for (auto& e : c.items())
        if (e.equals(item)) return true;
      return false;
    case Value::Kind::Dict:
      if (c.dict_obj().tag != DictObj::Tag::Plain) break;
      return c.dict_obj().find_key(item) != nullptr;
    case Value::Kind::Iterator: {
      auto& it = c.iter_obj();
      if (!it.error.empty()) raise(it.error_type, it.error);
      for (size_t i = it.pos; i < it.items.size(); ++i) {
        if (it.items[i].equals(item)) {
          if (it.type == IterObj::Type::Generator) it.pos = i + 1;  // consumed up to the match
          return true;
        }
      }
      if (it.type == IterObj::Type::Generator) it.pos = it.items.size();
      return false;
    }
    default:
      break;
  }
  raise_type_error("argument of type '{}' is not iterable", c.type_name());
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value(-v.as_double());
  if (is_intlike(v)) {
    if (v.as_int() == INT64_MIN) raise("OverflowError", "integer overflow");
    return Value(-v.as_int());
  }
  raise_type_error("bad operand type for unary -: '{}'", v.type_name());
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_str() + b.to_str());
  // str % Undefined: Undefined is mapping-like for CPython (it has __getitem__), so it formats.
  if (op == "%" && a.is_string() && b.is_undefined()) return Value(percent_format(a.str(), b));
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  bool nums = a.is_number() && b.is_number();
  bool ints = nums && is_intlike(a) && is_intlike(b);
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) raise("OverflowError", "integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_double() + b.as_double());
    if (a.is_markup() || (a.is_string() && b.is_markup())) {
      if (!b.is_string()) unsupported("+", a, b);
      return Value::markup((a.is_markup() ? a.str() : text::html_escape(a.str())) +
                           (b.is_markup() ? b.str() : text::html_escape(b.str())));
    }
    if (a.is_string()) {
      if (!b.is_string()) raise_type_error("can only concatenate str (not \"{}\") to str", b.type_name());
      return Value(a.str() + b.str());
    }
    if (a.is_list()) {
      if (!b.is_list() || a.is_tuple() != b.is_tuple())
        raise_type_error("can only concatenate {} (not \"{}\") to {}", a.type_name(), b.type_name(),
                         a.type_name());
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(out), a.is_tuple());
    }
    unsupported("+", a, b);
  }
  if (op == "-") {
    bool a_view = a.is_iterator() && !a.is_generator(), b_view = b.is_iterator() && !b.is_generator();
    if (a_view || b_view) {
      // dict views support set difference with any iterable (the other side is iterated first);
      // set results are not modelled.
      const Value& other = a_view ? b : a;
      if (!(a_view && b_view)) iterate(other);
      raise_type_error("set operations on dict views are not supported");
    }
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) raise("OverflowError", "integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_double() - b.as_double());
    unsupported("-", a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) raise("OverflowError", "integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_double() * b.as_double());
    const Value* seq = (a.is_string() || a.is_list()) && is_intlike(b) ? &a : nullptr;
    const Value* cnt = seq ? &b : nullptr;
    if (!seq && (b.is_string() || b.is_list()) && is_intlike(a)) {
      seq = &b;
      cnt = &a;
    }
    if (!seq && (a.is_string() || a.is_list()))
      raise_type_error("can't multiply sequence by non-int of type '{}'", b.type_name());
    if (!seq && (b.is_string() || b.is_list()))
      raise_type_error("can't multiply sequence by non-int of type '{}'", a.type_name());
    if (seq) {
      int64_t n = std::max<int64_t>(0, cnt->as_int());
      size_t unit = seq->is_string() ? seq->str().size() : seq->items().size();
      if (unit && static_cast<size_t>(n) > kMaxRepeat / unit)
        raise("MemoryError", "repetition result too large");
      if (seq->is_string()) {
        std::string out;
        out.reserve(unit * n);
        for (int64_t i = 0; i < n; ++i) out += seq->str();
        return seq->is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
      }
      std::vector<Value> out;
      for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq->items().begin(), seq->items().end());
      return Value::list(std::move(out), seq->is_tuple());
    }
    unsupported("*", a, b);
  }
  if (op == "/") {
    if (!nums) unsupported("/", a, b);
    if (b.as_double() == 0) raise("ZeroDivisionError", ints ? "division by zero" : "float division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) unsupported("//", a, b);
    if (ints) {
      if (b.as_int() == 0) raise("ZeroDivisionError", "integer division or modulo by zero");
      return Value(floor_div(a.as_int(), b.as_int()));
    }
    if (b.as_double() == 0) raise("ZeroDivisionError", "float floor division by zero");
    return Value(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_markup()) {
      // Markup % args escapes the arguments.
      auto esc = [](const Value& x) {
        if (x.is_markup() || x.is_number()) return x;
        return Value::markup(text::html_escape(x.to_str()));
      };
      Value args;
      if (b.is_tuple()) {
        std::vector<Value> items;
        for (auto& x : b.items()) items.push_back(esc(x));
        args = Value::list(std::move(items), true);
      } else if (b.is_mapping()) {
        args = Value::dict();
        for (auto& [k, x] : b.dict_obj().items) args.dict_obj().set_key(k, esc(x));
      } else {
        args = esc(b);
      }
      return Value::markup(percent_format(a.str(), args));
    }
    if (a.is_string()) return Value(percent_format(a.str(), b));
    if (!nums) unsupported("%", a, b);
    if (ints) {
      if (b.as_int() == 0) raise("ZeroDivisionError", "integer modulo by zero");
      return Value(py_mod(a.as_int(), b.as_int()));
    }
    double x = a.as_double(), y = b.as_double();
    if (y == 0) raise("ZeroDivisionError", "float modulo");
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value(r);
  }
  if (op == "**") {
    if (!nums) unsupported("** or pow()", a, b);
    if (ints && b.as_int() >= 0) {
      int64_t base = a.as_int(), e = b.as_int(), r = 1;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(r, base, &r)) raise("OverflowError", "integer overflow");
        e >>= 1;
        if (e && __builtin_mul_overflow(base, base, &base)) raise("OverflowError", "integer overflow");
      }
      return Value(r);
    }
    double x = a.as_double(), y = b.as_double();
    if (x == 0 && y < 0) raise("ZeroDivisionError", "0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y))
      raise("ValueError", "negative number cannot be raised to a fractional power (complex result)");
    double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
      raise("OverflowError", "(34, 'Numerical result out of range')");
    return Value(r);
  }
  raise("TemplateError", "unknown operator " + op);
}

int compare_values(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return compare_values(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  raise_type_error("'{}' not supported between instances of '{}' and '{}'", op, a.type_name(), b.type_name());
}

bool compare_order(const std::string& op, const Value& a, const Value& b) {
  if (!((a.is_number() && b.is_number()) || (a.is_string() && b.is_string()) ||
        (a.is_list() && b.is_list())) &&
      !a.is_undefined() && !b.is_undefined())
    raise_type_error("'{}' not supported between instances of '{}' and '{}'", op, a.type_name(),
                     b.type_name());
  if ((a.is_float() && std::isnan(a.as_double())) || (b.is_float() && std::isnan(b.as_double())))
    return false;
  int c = compare_values(a, b, op.c_str());
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

}  // namespace ferrum::jinja
