// Runtime values of the Jinja interpreter. They follow Python semantics (what Jinja2 templates
// see when Hugging Face renders them): lists and dicts are shared by reference, dicts keep
// insertion order, and "undefined" is a value of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ferrum::jinja {

class Value;

struct ListObj {
  std::vector<Value> items;
  bool is_tuple = false;
};

// Insertion-ordered map with Python key semantics (str, int, float, bool, None, tuple keys;
// 1 == 1.0 == True). Chat-template dicts are small: linear lookup is fine.
struct DictObj {
  enum class Tag { Plain, Namespace, Loop };
  std::vector<std::pair<Value, Value>> items;
  Tag tag = Tag::Plain;

  Value* find(const std::string& key);
  const Value* find(const std::string& key) const;
  Value* find_key(const Value& key);  // raises TypeError for unhashable keys
  void set(const std::string& key, Value v);
  void set_key(Value key, Value v);
};

// Python lazy iterables that Jinja filters and dict methods return: generators (select, map,
// unique, batch, items, reverse) are consumed by iteration and have no len(); dict views
// (dict.items/keys/values) can be iterated again and have a len().
struct IterObj {
  enum class Type { Generator, View };
  Type type = Type::Generator;
  std::string type_name;  // "generator", "list_reverseiterator", "dict_items", ...
  std::string origin;     // generator function name for repr ("do_map")
  std::vector<Value> items;
  size_t pos = 0;  // generators: items before pos were consumed
  // An exception the generator raises once iterated (Python generator bodies run lazily).
  std::string error_type = "TypeError", error;
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

struct Function {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

struct Undefined {
  std::string hint;  // what the error says if the value is used: "'x' is undefined"
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Iterator };

  Value() : v_(Undefined{}) {}
  Value(std::nullptr_t) : v_(nullptr) {}
  Value(bool b) : v_(b) {}
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::shared_ptr<ListObj> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<DictObj> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<Function> f) : v_(std::move(f)) {}
  Value(std::shared_ptr<IterObj> it) : v_(std::move(it)) {}
  Value(Undefined u) : v_(std::move(u)) {}

  static Value undefined(std::string hint = {}) { return Value(Undefined{std::move(hint)}); }
  // markupsafe.Markup: a str marked safe (the |safe filter); concatenating a plain str to it
  // HTML-escapes the plain side, as Python does.
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  static Value list(std::vector<Value> items = {}, bool tuple = false);
  static Value dict(DictObj::Tag tag = DictObj::Tag::Plain);
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);
  static Value generator(std::vector<Value> items, std::string origin, std::string type_name = "generator");
  static Value view(std::vector<Value> items, std::string type_name);
  // JSON -> Value; objects keep their key order.
  // Template data from JSON; deeper than kMaxJsonDepth levels raises ValueError.
  static constexpr int kMaxJsonDepth = 256;
  static Value from_json(const nlohmann::ordered_json& j, int depth = 0);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::String; }
  bool is_markup() const { return markup_ && is_string(); }
  bool is_list() const { return kind() == Kind::List; }  // lists and tuples
  bool is_tuple() const { return is_list() && std::get<6>(v_)->is_tuple; }
  bool is_dict() const { return kind() == Kind::Dict; }  // plain dicts, namespaces, loop objects
  bool is_mapping() const { return is_dict() && dict_obj().tag == DictObj::Tag::Plain; }
  bool is_namespace() const { return is_dict() && dict_obj().tag == DictObj::Tag::Namespace; }
  bool is_function() const { return kind() == Kind::Function; }
  bool is_iterator() const { return kind() == Kind::Iterator; }
  bool is_generator() const { return is_iterator() && iter_obj().type == IterObj::Type::Generator; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;    // Int or Bool
  double as_double() const;  // any number
  const std::string& str() const { return std::get<std::string>(v_); }
  ListObj& list_obj() const { return *std::get<6>(v_); }
  std::vector<Value>& items() const { return list_obj().items; }
  DictObj& dict_obj() const { return *std::get<7>(v_); }
  Function& func() const { return *std::get<8>(v_); }
  IterObj& iter_obj() const { return *std::get<9>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

  // Python truthiness.
  bool truthy() const;
  // Python type name as used in error messages ("NoneType", "str", "dict", ...).
  std::string type_name() const;
  // Python str(): what {{ value }} prints ("None", "True", "['a', 1]").
  std::string to_str() const;
  // Python repr().
  std::string repr() const;
  // Python ==.
  bool equals(const Value& other) const;

 private:
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<ListObj>,
               std::shared_ptr<DictObj>, std::shared_ptr<Function>, std::shared_ptr<IterObj>>
      v_;
  bool markup_ = false;
};

// Python float repr(): shortest round-trip digits, exponent form outside [1e-4, 1e16).
std::string float_repr(double d);

struct JsonOptions {
  bool ensure_ascii = false;
  int indent = -1;         // < 0: no indent (single line)
  std::string indent_str;  // used when indent_is_string
  bool indent_is_string = false;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
// Python json.dumps(value, ...) with the given options; fails on values JSON cannot hold.
std::string to_json(const Value& v, const JsonOptions& opt);

}  // namespace ferrum::jinja
