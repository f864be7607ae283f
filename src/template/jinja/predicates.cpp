// Jinja2 builtin tests ("x is defined", "x is string", ...; jinja2/tests.py semantics).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "template/jinja/builtins.h"
#include "template/jinja/builtins_util.h"
#include "template/jinja/error.h"
#include "template/jinja/ops.h"
#include "template/jinja/text.h"

namespace ferrum::jinja {

namespace {

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
// Jinja's Undefined defines __call__, so callable() is true for it.
bool t_callable(const Value& v, CallArgs&) {
  return v.is_function() || v.is_undefined();
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

}  // namespace

TestFn find_test(const std::string& name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : it->second;
}

}  // namespace ferrum::jinja
