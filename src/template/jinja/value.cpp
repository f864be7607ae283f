#include "template/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "template/jinja/error.h"
#include "template/jinja/ops.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

Value* DictObj::find(const std::string& key) {
  for (auto& [k, v] : items)
    if (k.is_string() && k.str() == key) return &v;
  return nullptr;
}

const Value* DictObj::find(const std::string& key) const {
  for (auto& [k, v] : items)
    if (k.is_string() && k.str() == key) return &v;
  return nullptr;
}

namespace {
void check_hashable(const Value& key) {
  if ((key.is_list() && !key.is_tuple()) || key.is_dict() || key.is_iterator())
    raise("TypeError", "unhashable type: '" + key.type_name() + "'");
  if (key.is_tuple())
    for (auto& e : key.items()) check_hashable(e);
}
}  // namespace

Value* DictObj::find_key(const Value& key) {
  if (key.is_string()) return find(key.str());
  check_hashable(key);
  for (auto& [k, v] : items)
    if (k.equals(key)) return &v;
  return nullptr;
}

void DictObj::set(const std::string& key, Value v) {
  if (Value* p = find(key))
    *p = std::move(v);
  else
    items.emplace_back(Value(key), std::move(v));
}

void DictObj::set_key(Value key, Value v) {
  if (Value* p = find_key(key))
    *p = std::move(v);
  else
    items.emplace_back(std::move(key), std::move(v));
}

Value Value::list(std::vector<Value> items, bool tuple) {
  auto l = std::make_shared<ListObj>();
  l->items = std::move(items);
  l->is_tuple = tuple;
  return Value(std::move(l));
}

Value Value::dict(DictObj::Tag tag) {
  auto d = std::make_shared<DictObj>();
  d->tag = tag;
  return Value(std::move(d));
}

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->fn = std::move(fn);
  return Value(std::move(f));
}

Value Value::generator(std::vector<Value> items, std::string origin, std::string type_name) {
  auto it = std::make_shared<IterObj>();
  it->type = IterObj::Type::Generator;
  it->items = std::move(items);
  it->origin = std::move(origin);
  it->type_name = std::move(type_name);
  return Value(std::move(it));
}

Value Value::view(std::vector<Value> items, std::string type_name) {
  auto it = std::make_shared<IterObj>();
  it->type = IterObj::Type::View;
  it->items = std::move(items);
  it->type_name = std::move(type_name);
  return Value(std::move(it));
}

Value Value::from_json(const nlohmann::ordered_json& j, int depth) {
  using T = nlohmann::ordered_json::value_t;
  // Conversion (and everything that walks a value later: tojson, comparisons) recurses.
  if (depth > kMaxJsonDepth)
    raise("ValueError", fmt::format("template data nested deeper than {} levels", kMaxJsonDepth));
  switch (j.type()) {
    case T::null:
    case T::discarded:
      return Value(nullptr);
    case T::boolean:
      return Value(j.get<bool>());
    case T::number_integer:
      return Value(j.get<int64_t>());
    case T::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case T::number_float:
      return Value(j.get<double>());
    case T::string:
      return Value(j.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (auto& e : j) items.push_back(from_json(e, depth + 1));
      return list(std::move(items));
    }
    case T::object: {
      Value d = dict();
      for (auto& [k, v] : j.items()) d.dict_obj().items.emplace_back(Value(k), from_json(v, depth + 1));
      return d;
    }
    case T::binary:
      break;
  }
  raise("TypeError", "binary JSON values are not supported");
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_double() != 0.0;
    case Kind::String:
      return !str().empty();
    case Kind::List:
      return !items().empty();
    case Kind::Dict:
      return dict_obj().tag != DictObj::Tag::Plain || !dict_obj().items.empty();
    case Kind::Function:
      return true;
    case Kind::Iterator:  // a generator has no __len__: always true; views are sized
      return is_generator() || iter_obj().items.size() > iter_obj().pos;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return markup_ ? "Markup" : "str";
    case Kind::List:
      return is_tuple() ? "tuple" : "list";
    case Kind::Dict:
      return dict_obj().tag == DictObj::Tag::Namespace ? "Namespace"
             : dict_obj().tag == DictObj::Tag::Loop    ? "LoopContext"
                                                       : "dict";
    case Kind::Function:
      return "function";
    case Kind::Iterator:
      return iter_obj().type_name;
  }
  return "object";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (digits.size() <= static_cast<size_t>(exp) + 1) {
        out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
      }
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
  }
  if (out.empty()) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return sign + out;
}

namespace {

void to_str_impl(const Value& v, std::string& out, bool repr) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::Undefined:
      if (repr) out += "Undefined";
      return;
    case K::None:
      out += "None";
      return;
    case K::Bool:
      out += v.as_bool() ? "True" : "False";
      return;
    case K::Int:
      out += std::to_string(v.as_int());
      return;
    case K::Float:
      out += float_repr(v.as_double());
      return;
    case K::String:
      if (repr && v.is_markup())
        out += "Markup(" + text::repr(v.str()) + ")";
      else
        out += repr ? text::repr(v.str()) : v.str();
      return;
    case K::List: {
      bool tuple = v.is_tuple();
      out += tuple ? '(' : '[';
      auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        to_str_impl(items[i], out, true);
      }
      if (tuple && items.size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case K::Dict: {
      auto& d = v.dict_obj();
      if (d.tag == DictObj::Tag::Loop) {
        out += "<LoopContext " + d.find("index")->to_str() + "/" + d.find("length")->to_str() + ">";
        return;
      }
      if (d.tag == DictObj::Tag::Namespace) out += "<Namespace ";
      out += '{';
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        to_str_impl(d.items[i].first, out, true);
        out += ": ";
        to_str_impl(d.items[i].second, out, true);
      }
      out += '}';
      if (d.tag == DictObj::Tag::Namespace) out += '>';
      return;
    }
    case K::Function:
      out += "<function " + v.func().name + ">";
      return;
    case K::Iterator: {
      auto& it = v.iter_obj();
      if (it.type == IterObj::Type::View) {
        // dict_items([('a', 1)])
        out += it.type_name + "([";
        for (size_t i = 0; i < it.items.size(); ++i) {
          if (i) out += ", ";
          to_str_impl(it.items[i], out, true);
        }
        out += "])";
      } else if (it.type_name == "generator") {
        out += "<generator object " + it.origin + " at 0x7f0000000000>";
      } else {
        out += "<" + it.type_name + " object at 0x7f0000000000>";
      }
      return;
    }
  }
}

}  // namespace

std::string Value::to_str() const {
  if (is_string()) return str();
  std::string out;
  to_str_impl(*this, out, false);
  return out;
}

std::string Value::repr() const {
  std::string out;
  if (is_undefined()) return "Undefined";
  to_str_impl(*this, out, true);
  return out;
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (is_float() || o.is_float()) return as_double() == o.as_double();
    return as_int() == o.as_int();
  }
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return str() == o.str();
    case Kind::List: {
      if (is_tuple() != o.is_tuple()) return false;
      auto &a = items(), &b = o.items();
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].equals(b[i])) return false;
      return true;
    }
    case Kind::Dict: {
      auto &a = dict_obj(), &b = o.dict_obj();
      if (&a == &b) return true;
      if (a.tag != DictObj::Tag::Plain || b.tag != DictObj::Tag::Plain) return false;
      if (a.items.size() != b.items.size()) return false;
      for (auto& [k, v] : a.items) {
        const Value* w = b.find_key(k);
        if (!w || !v.equals(*w)) return false;
      }
      return true;
    }
    case Kind::Function:
      return &func() == &o.func();
    case Kind::Iterator:
      return &iter_obj() == &o.iter_obj();
    default:
      return false;
  }
}

namespace {

void json_string(const std::string& s, std::string& out, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<uint8_t>(s[i]);
    if (b >= 0x80) {
      size_t start = i;
      uint32_t cp = text::decode_at(s, i);
      if (!ensure_ascii) {
        out.append(s, start, i - start);
        continue;
      }
      char buf[16];
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      continue;
    }
    ++i;
    switch (b) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (b < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", b);
          out += buf;
        } else {
          out += static_cast<char>(b);
        }
    }
  }
  out += '"';
}

// json.dumps turns int/float/bool/None keys into strings.
std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String:
      return k.str();
    case Value::Kind::Int:
      return std::to_string(k.as_int());
    case Value::Kind::Float: {
      double d = k.as_double();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
      return float_repr(d);
    }
    case Value::Kind::Bool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::None:
      return "null";
    default:
      raise("TypeError", "keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

void newline_indent(std::string& out, const JsonOptions& opt, int level) {
  out += '\n';
  for (int i = 0; i < level; ++i) {
    if (opt.indent_is_string)
      out += opt.indent_str;
    else
      out.append(static_cast<size_t>(opt.indent), ' ');
  }
}

void to_json_impl(const Value& v, const JsonOptions& opt, std::string& out, int level, int depth) {
  using K = Value::Kind;
  if (depth > 512) raise("ValueError", "Circular reference detected");
  bool pretty = opt.indent >= 0 || opt.indent_is_string;
  switch (v.kind()) {
    case K::None:
      out += "null";
      return;
    case K::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case K::Int:
      out += std::to_string(v.as_int());
      return;
    case K::Float: {
      double d = v.as_double();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d < 0 ? "-Infinity" : "Infinity";
      else
        out += float_repr(d);
      return;
    }
    case K::String:
      json_string(v.str(), out, opt.ensure_ascii);
      return;
    case K::List: {
      auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += opt.item_sep;
        if (pretty) newline_indent(out, opt, level + 1);
        to_json_impl(items[i], opt, out, level + 1, depth + 1);
      }
      if (pretty) newline_indent(out, opt, level);
      out += ']';
      return;
    }
    case K::Dict: {
      auto& d = v.dict_obj();
      if (d.tag != DictObj::Tag::Plain) break;
      if (d.items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> entries;
      for (auto& e : d.items) entries.push_back(&e);
      if (opt.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return compare_values(a->first, b->first) < 0; });
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += opt.item_sep;
        if (pretty) newline_indent(out, opt, level + 1);
        json_string(json_key(entries[i]->first), out, opt.ensure_ascii);
        out += opt.key_sep;
        to_json_impl(entries[i]->second, opt, out, level + 1, depth + 1);
      }
      if (pretty) newline_indent(out, opt, level);
      out += '}';
      return;
    }
    default:
      break;
  }
  raise("TypeError", "Object of type " + v.type_name() + " is not JSON serializable");
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& opt) {
  std::string out;
  to_json_impl(v, opt, out, 0, 0);
  return out;
}

}  // namespace ferrum::jinja
