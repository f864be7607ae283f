// Jinja2 builtin filters and tests, Python methods of str/list/dict values, and the default
// globals (range, namespace, dict, joiner), with Jinja2 3.1 / Python 3 semantics.
#pragma once

#include <string>

#include "template/jinja/value.h"

namespace ferrum::jinja {

using FilterFn = Value (*)(const Value& value, CallArgs& args);
using TestFn = bool (*)(const Value& value, CallArgs& args);

// nullptr if there is no such filter / test.
FilterFn find_filter(const std::string& name);
TestFn find_test(const std::string& name);

// obj.name(args) for builtin types; returns false if obj has no such method.
bool call_method(const Value& obj, const std::string& name, CallArgs& args, Value& out);
// fn(args) for a callable value (raises TypeError / UndefinedError otherwise).
Value call_value(const Value& fn, CallArgs& args);

// Adds range, namespace, dict, joiner to a globals dict.
void add_default_globals(DictObj& globals);

// Binds call arguments to parameter names (Python rules): positional first, then keywords.
class ArgBinder {
 public:
  ArgBinder(const CallArgs& args, const std::string& fname, std::initializer_list<const char*> names,
            bool allow_extra_positional = false);
  const Value* get(size_t i) const { return i < bound_.size() && bound_[i] ? bound_[i] : nullptr; }
  Value get_or(size_t i, Value def) const { return get(i) ? *get(i) : std::move(def); }
  const std::vector<const Value*>& extra() const { return extra_; }

 private:
  std::vector<const Value*> bound_;
  std::vector<const Value*> extra_;
};

}  // namespace ferrum::jinja
