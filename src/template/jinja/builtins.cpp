// Argument binding, shared helpers, calling values and the default globals.
#include "template/jinja/builtins.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "template/jinja/builtins_util.h"
#include "template/jinja/error.h"
#include "template/jinja/ops.h"
#include "template/jinja/text.h"

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
  if (!v.is_string()) raise_type_error("{}must be str, not {}", what, v.type_name());
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

// soft_str keeps a Markup a Markup, and Markup's str methods return Markup.
Value same_kind(const Value& v, std::string s) {
  return v.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
}

Value dict_items(const Value& v) {
  std::vector<Value> out;
  for (auto& [k, val] : v.dict_obj().items) out.push_back(Value::list({k, val}, true));
  return Value::list(std::move(out));
}

namespace {

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
