// Python/Jinja semantics of operators, attribute and item access, iteration and membership.
// Failures raise the Python exception Jinja2 would (TypeError, UndefinedError, ...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "template/jinja/value.h"

namespace ferrum::jinja {

// Raises UndefinedError for an undefined value that is being used.
[[noreturn]] void fail_undefined(const Value& v);

// Jinja environment.getattr / getitem: missing -> undefined (with a hint for later errors).
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                const std::optional<int64_t>& step);

// Python iter(): list items, dict keys, string characters; undefined -> empty.
std::vector<Value> iterate(const Value& v);
// Python len().
int64_t length(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);

Value binary_op(const std::string& op, const Value& a, const Value& b);
// Ordering comparison: op is "<", "<=", ">", ">=".
bool compare_order(const std::string& op, const Value& a, const Value& b);
// Three-way compare used by sort (Python < semantics).
// op names the operator in the TypeError for incomparable types.
int compare_values(const Value& a, const Value& b, const char* op = "<");
Value negate(const Value& v);

}  // namespace ferrum::jinja
