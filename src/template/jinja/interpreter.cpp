#include "template/jinja/interpreter.h"

#include <fmt/format.h>

#include <optional>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/ops.h"

namespace ferrum::jinja {

namespace {
constexpr int kMaxCallDepth = 100;
constexpr size_t kMaxOutput = size_t{256} << 20;
}  // namespace

Value* Scope::find_local(const std::string& name) {
  for (auto& [k, v] : vars)
    if (k == name) return &v;
  return nullptr;
}

Value* Scope::lookup(const std::string& name) {
  for (Scope* s = this; s; s = s->parent)
    if (Value* v = s->find_local(name)) return v;
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  if (Value* p = find_local(name))
    *p = std::move(v);
  else
    vars.emplace_back(name, std::move(v));
}

Scope* Interpreter::new_scope(Scope* parent) {
  arena_.push_back(std::make_unique<Scope>());
  arena_.back()->parent = parent;
  return arena_.back().get();
}

void Interpreter::run(const Body& body, std::string& out) {
  exec_body(body, root_, out);
}

void Interpreter::append(std::string& out, const std::string& s) {
  if (out.size() + s.size() > kMaxOutput) raise("MemoryError", "rendered output exceeds 256 MiB");
  out += s;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, Scope* scope, std::string& out) {
  for (auto& s : body) {
    Flow f = exec(*s, scope, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

void Interpreter::bind_targets(const std::vector<std::string>& targets, const Value& item, Scope* scope) {
  if (targets.size() == 1) {
    scope->set(targets[0], item);
    return;
  }
  if (item.is_undefined()) fail_undefined(item);
  std::vector<Value> parts = iterate(item);
  if (parts.size() < targets.size())
    raise("ValueError",
          fmt::format("not enough values to unpack (expected {}, got {})", targets.size(), parts.size()));
  if (parts.size() > targets.size())
    raise("ValueError", fmt::format("too many values to unpack (expected {})", targets.size()));
  for (size_t i = 0; i < targets.size(); ++i) scope->set(targets[i], parts[i]);
}

void Interpreter::assign(const Stmt& s, Scope* scope, Value v) {
  if (!s.attr.empty()) {
    Value* ns = scope->lookup(s.targets[0]);
    if (!ns || !ns->is_namespace())
      raise("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
    ns->dict_obj().set(s.attr, std::move(v));
    return;
  }
  bind_targets(s.targets, v, scope);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, Scope* scope, std::string& out) {
  Value iterable = eval(*s.expr, scope);
  run_loop(s, scope, iterable, 1, out);
  return Flow::Normal;
}

void Interpreter::run_loop(const Stmt& s, Scope* scope, const Value& iterable, int depth, std::string& out) {
  std::vector<Value> items = iterate(iterable);
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& item : items) {
      Scope* sc = new_scope(scope);
      bind_targets(s.targets, item, sc);
      if (eval(*s.cond, sc).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    line_ = s.line;
    exec_body(s.else_body, new_scope(scope), out);
    return;
  }
  // loop.changed(*values) remembers the last values across iterations.
  auto last_changed = std::make_shared<std::optional<Value>>();
  Value changed = Value::function("changed", [last_changed](CallArgs& a) {
    Value v = Value::list(a.pos, true);
    if (*last_changed && (*last_changed)->equals(v)) return Value(false);
    *last_changed = v;
    return Value(true);
  });
  Value recurse;
  if (s.recursive) {
    if (++call_depth_ > kMaxCallDepth)
      raise("RecursionError", "maximum recursion depth exceeded in recursive loop");
    recurse = Value::function("loop", [this, &s, scope, depth](CallArgs& a) {
      if (a.pos.size() != 1 || !a.kw.empty()) raise_type_error("loop() takes exactly one iterable argument");
      std::string sub;
      run_loop(s, scope, a.pos[0], depth + 1, sub);
      return Value(std::move(sub));
    });
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    Scope* sc = new_scope(scope);
    Value loop = Value::dict(DictObj::Tag::Loop);
    auto& d = loop.dict_obj().items;
    d.reserve(13);
    d.emplace_back("index", Value(i + 1));
    d.emplace_back("index0", Value(i));
    d.emplace_back("revindex", Value(n - i));
    d.emplace_back("revindex0", Value(n - i - 1));
    d.emplace_back("first", Value(i == 0));
    d.emplace_back("last", Value(i == n - 1));
    d.emplace_back("length", Value(n));
    d.emplace_back("depth", Value(depth));
    d.emplace_back("depth0", Value(depth - 1));
    d.emplace_back("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    d.emplace_back("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    d.emplace_back("changed", changed);
    if (s.recursive) d.emplace_back("__call__", recurse);
    sc->set("loop", std::move(loop));
    bind_targets(s.targets, items[i], sc);
    Flow f = exec_body(s.body, sc, out);
    if (f == Flow::Break) break;
  }
  if (s.recursive) --call_depth_;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, Scope* scope, std::string& out) {
  line_ = s.line;
  switch (s.k) {
    case Stmt::K::Text:
      append(out, s.text);
      return Flow::Normal;
    case Stmt::K::Output:
      append(out, eval(*s.expr, scope).to_str());
      return Flow::Normal;
    case Stmt::K::If:
      for (auto& [cond, body] : s.branches) {
        if (eval(*cond, scope).truthy()) return exec_body(body, scope, out);
      }
      return exec_body(s.else_body, scope, out);
    case Stmt::K::For:
      return exec_for(s, scope, out);
    case Stmt::K::Set:
      assign(s, scope, eval(*s.expr, scope));
      return Flow::Normal;
    case Stmt::K::SetBlock: {
      std::string captured;
      exec_body(s.body, new_scope(scope), captured);
      Value v(std::move(captured));
      if (s.expr) v = eval_filter(*s.expr, scope, &v);
      line_ = s.line;
      assign(s, scope, std::move(v));
      return Flow::Normal;
    }
    case Stmt::K::Macro:
      scope->set(s.name, make_macro(s.name, s.params, s.body, scope));
      return Flow::Normal;
    case Stmt::K::CallBlock: {
      const Expr& call = *s.expr;
      Value callee = eval(*call.a, scope);
      CallArgs args = eval_args(call, scope);
      args.kw.emplace_back("caller", make_macro("caller", s.params, s.body, scope));
      line_ = s.line;
      append(out, call_value(callee, args).to_str());
      return Flow::Normal;
    }
    case Stmt::K::FilterBlock: {
      std::string captured;
      exec_body(s.body, new_scope(scope), captured);
      Value v(std::move(captured));
      line_ = s.line;
      append(out, eval_filter(*s.expr, scope, &v).to_str());
      return Flow::Normal;
    }
    case Stmt::K::Break:
      return Flow::Break;
    case Stmt::K::Continue:
      return Flow::Continue;
    case Stmt::K::Do:
      eval(*s.expr, scope);
      return Flow::Normal;
    case Stmt::K::Scope:
      return exec_body(s.body, scope, out);
    case Stmt::K::With: {
      // Values are evaluated in the outer scope, then bound in a new one.
      Scope* sc = new_scope(scope);
      std::vector<Value> vals;
      for (auto& kv : s.assigns) vals.push_back(eval(*kv.second, scope));
      for (size_t i = 0; i < vals.size(); ++i) sc->set(s.assigns[i].first, std::move(vals[i]));
      return exec_body(s.body, sc, out);
    }
  }
  return Flow::Normal;
}

Value Interpreter::make_macro(const std::string& name, const std::vector<MacroParam>& params,
                              const Body& body, Scope* closure) {
  return Value::function(name, [this, name, &params, &body, closure](CallArgs& a) -> Value {
    if (++call_depth_ > kMaxCallDepth)
      raise("RecursionError", "maximum recursion depth exceeded in macro calls");
    int saved_line = line_;
    Scope* sc = new_scope(closure);
    std::vector<Value> varargs;
    std::vector<bool> given(params.size(), false);
    for (size_t i = 0; i < a.pos.size(); ++i) {
      if (i < params.size()) {
        sc->set(params[i].name, a.pos[i]);
        given[i] = true;
      } else {
        varargs.push_back(a.pos[i]);
      }
    }
    Value kwargs = Value::dict();
    for (auto& [k, v] : a.kw) {
      size_t i = 0;
      while (i < params.size() && params[i].name != k) ++i;
      if (i < params.size()) {
        if (given[i]) raise_type_error("macro '{}' got multiple values for argument '{}'", name, k);
        sc->set(k, v);
        given[i] = true;
      } else if (k == "caller") {
        sc->set("caller", v);
      } else {
        kwargs.dict_obj().set(k, v);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (given[i]) continue;
      if (params[i].default_value)
        sc->set(params[i].name, eval(*params[i].default_value, sc));
      else
        sc->set(params[i].name,
                Value::undefined(fmt::format("parameter '{}' was not provided", params[i].name)));
    }
    sc->set("varargs", Value::list(std::move(varargs), true));
    sc->set("kwargs", std::move(kwargs));
    std::string out;
    exec_body(body, sc, out);
    --call_depth_;
    line_ = saved_line;
    return Value(std::move(out));
  });
}

CallArgs Interpreter::eval_args(const Expr& e, Scope* scope) {
  CallArgs a;
  a.pos.reserve(e.args.size());
  for (auto& x : e.args) a.pos.push_back(eval(*x, scope));
  for (auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, scope));
  return a;
}

Value Interpreter::eval_filter(const Expr& e, Scope* scope, const Value* input) {
  Value v = e.a ? (e.a->k == Expr::K::Filter ? eval_filter(*e.a, scope, input) : eval(*e.a, scope)) : *input;
  CallArgs args = eval_args(e, scope);
  FilterFn f = find_filter(e.name);
  line_ = e.line;
  if (!f) raise("TemplateRuntimeError", fmt::format("No filter named '{}' found.", e.name));
  return f(v, args);
}

Value Interpreter::eval(const Expr& e, Scope* scope) {
  line_ = e.line;
  switch (e.k) {
    case Expr::K::Literal:
      return e.value;
    case Expr::K::Name: {
      if (Value* v = scope->lookup(e.name)) return *v;
      return Value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case Expr::K::List:
    case Expr::K::Tuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (auto& x : e.args) items.push_back(eval(*x, scope));
      return Value::list(std::move(items), e.k == Expr::K::Tuple);
    }
    case Expr::K::Dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i], scope);
        d.dict_obj().set_key(std::move(k), eval(*e.args[i + 1], scope));
      }
      return d;
    }
    case Expr::K::Attr: {
      Value obj = eval(*e.a, scope);
      line_ = e.line;
      return get_attr(obj, e.name);
    }
    case Expr::K::Item: {
      Value obj = eval(*e.a, scope);
      Value key = eval(*e.b, scope);
      line_ = e.line;
      return get_item(obj, key);
    }
    case Expr::K::Slice: {
      Value obj = eval(*e.a, scope);
      std::optional<int64_t> idx[3];
      for (size_t i = 0; i < 3; ++i) {
        if (!e.args[i]) continue;
        Value v = eval(*e.args[i], scope);
        if (v.is_none()) continue;
        if (!(v.is_int() || v.is_bool())) raise_type_error("slice indices must be integers or None");
        idx[i] = v.as_int();
      }
      line_ = e.line;
      return get_slice(obj, idx[0], idx[1], idx[2]);
    }
    case Expr::K::Call: {
      if (e.a->k == Expr::K::Attr) {
        Value obj = eval(*e.a->a, scope);
        CallArgs args = eval_args(e, scope);
        line_ = e.line;
        Value out;
        if (call_method(obj, e.a->name, args, out)) return out;
        return call_value(get_attr(obj, e.a->name), args);
      }
      Value fn = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      line_ = e.line;
      return call_value(fn, args);
    }
    case Expr::K::Filter:
      return eval_filter(e, scope, nullptr);
    case Expr::K::Test: {
      Value v = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      TestFn t = find_test(e.name);
      line_ = e.line;
      if (!t) raise("TemplateRuntimeError", fmt::format("No test named '{}' found.", e.name));
      return Value(t(v, args) != e.negated);
    }
    case Expr::K::Neg:
      return negate(eval(*e.a, scope));
    case Expr::K::Pos: {
      Value v = eval(*e.a, scope);
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) raise_type_error("bad operand type for unary +: '{}'", v.type_name());
      return v.is_bool() ? Value(v.as_int()) : v;
    }
    case Expr::K::Not:
      return Value(!eval(*e.a, scope).truthy());
    case Expr::K::And: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case Expr::K::Or: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case Expr::K::Binary: {
      Value a = eval(*e.a, scope);
      Value b = eval(*e.b, scope);
      line_ = e.line;
      return binary_op(e.name, a, b);
    }
    case Expr::K::Compare: {
      Value left = eval(*e.a, scope);
      for (auto& [op, rhs] : e.kwargs) {
        Value right = eval(*rhs, scope);
        line_ = e.line;
        bool r;
        if (op == "==")
          r = left.equals(right);
        else if (op == "!=")
          r = !left.equals(right);
        else if (op == "in")
          r = contains(right, left);
        else if (op == "notin")
          r = !contains(right, left);
        else
          r = compare_order(op, left, right);
        if (!r) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::K::Cond: {
      if (eval(*e.b, scope).truthy()) return eval(*e.a, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return Value();
}

}  // namespace ferrum::jinja
