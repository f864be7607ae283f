// Tree-walking evaluator of a parsed Jinja template with Jinja2's scoping rules: a for loop
// iteration, a macro call and a block set get their own scope; if blocks do not.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/jinja/ast.h"
#include "template/jinja/value.h"

namespace ferrum::jinja {

struct Scope {
  Scope* parent = nullptr;
  std::vector<std::pair<std::string, Value>> vars;

  Value* find_local(const std::string& name);
  Value* lookup(const std::string& name);
  void set(const std::string& name, Value v);
};

class Interpreter {
 public:
  Interpreter() = default;
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Root scope of the render; variables are set on it before run().
  Scope& root() { return *root_; }
  // Renders body into out. Raises Raise on errors; line() then tells where.
  void run(const Body& body, std::string& out);
  int line() const { return line_; }

 private:
  enum class Flow { Normal, Break, Continue };

  Scope* new_scope(Scope* parent);
  Flow exec_body(const Body& body, Scope* scope, std::string& out);
  Flow exec(const Stmt& s, Scope* scope, std::string& out);
  Flow exec_for(const Stmt& s, Scope* scope, std::string& out);
  void run_loop(const Stmt& s, Scope* scope, const Value& iterable, int depth, std::string& out);
  void assign(const Stmt& s, Scope* scope, Value v);
  void bind_targets(const std::vector<std::string>& targets, const Value& item, Scope* scope);
  Value eval(const Expr& e, Scope* scope);
  Value eval_filter(const Expr& e, Scope* scope, const Value* input);
  CallArgs eval_args(const Expr& e, Scope* scope);
  Value make_macro(const std::string& name, const std::vector<MacroParam>& params, const Body& body,
                   Scope* closure);
  void append(std::string& out, const std::string& s);

  std::vector<std::unique_ptr<Scope>> arena_;  // every scope of this render (macros refer to them)
  Scope* root_ = new_scope(nullptr);
  int line_ = 0;
  int call_depth_ = 0;
};

}  // namespace ferrum::jinja
