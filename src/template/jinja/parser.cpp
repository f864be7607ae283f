#include "template/jinja/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"

namespace ferrum::jinja {

namespace {

constexpr int kMaxDepth = 200;  // nesting limit: keeps recursion far from the stack limit

class Parser {
 public:
  Parser(const std::vector<Token>& t, const std::string& name) : t_(t), name_(name) {}

  Body parse_template() {
    std::string found;
    Body b = parse_body({}, found, "");
    check_body(b, false);
    return b;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  const Token& next() {
    const Token& tk = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return tk;
  }

  [[noreturn]] void fail_at(const Token& tk, const std::string& msg) const {
    throw TemplateError("TemplateSyntaxError", msg, fmt::format("{}:{}:{}", name_, tk.line, tk.col));
  }

  static std::string describe(const Token& tk) {
    switch (tk.type) {
      case Tok::Text:
        return "template data";
      case Tok::VarBegin:
        return "'{{'";
      case Tok::VarEnd:
        return "end of print statement '}}'";
      case Tok::BlockBegin:
        return "'{%'";
      case Tok::BlockEnd:
        return "end of statement block '%}'";
      case Tok::Name:
        return "'" + tk.text + "'";
      case Tok::String:
        return "string";
      case Tok::Int:
      case Tok::Float:
        return "number " + tk.text;
      case Tok::Op:
        return "'" + tk.text + "'";
      case Tok::Eof:
        return "end of template";
    }
    return "token";
  }

  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }

  void expect_op(const char* op) {
    if (!is_op(op)) fail_at(cur(), fmt::format("expected '{}', got {}", op, describe(cur())));
    next();
  }
  std::string expect_name(const char* what) {
    if (cur().type != Tok::Name) fail_at(cur(), fmt::format("expected {}, got {}", what, describe(cur())));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd)
      fail_at(cur(), fmt::format("expected end of statement block '%}}', got {}", describe(cur())));
    next();
  }

  ExprPtr node(Expr::K k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->k = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  struct DepthGuard {
    Parser& p;
    const Token& at;
    DepthGuard(Parser& p_, const Token& at_) : p(p_), at(at_) {
      if (++p.depth_ > kMaxDepth) p.fail_at(at, "template nesting too deep");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements ----

  // Parses statements until a block tag named in `ends`; consumes "{% name" and sets `found`.
  Body parse_body(std::initializer_list<const char*> ends, std::string& found, const char* opener) {
    Body body;
    while (true) {
      const Token& tk = cur();
      switch (tk.type) {
        case Tok::Eof:
          if (ends.size() == 0) return body;
          {
            std::string want;
            for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
            fail_at(tk, fmt::format("unexpected end of template: expected {} to close '{}'", want, opener));
          }
        case Tok::Text: {
          auto s = std::make_unique<Stmt>();
          s->k = Stmt::K::Text;
          s->line = tk.line;
          s->text = tk.text;
          body.push_back(std::move(s));
          next();
          break;
        }
        case Tok::VarBegin: {
          next();
          auto s = std::make_unique<Stmt>();
          s->k = Stmt::K::Output;
          s->line = tk.line;
          s->col = tk.col;
          s->expr = parse_tuple(true);
          if (cur().type != Tok::VarEnd)
            fail_at(cur(), fmt::format("expected end of print statement '}}}}', got {}", describe(cur())));
          next();
          body.push_back(std::move(s));
          break;
        }
        case Tok::BlockBegin: {
          const Token& kw = peek();
          if (kw.type != Tok::Name)
            fail_at(kw, fmt::format("expected a tag name after '{{%', got {}", describe(kw)));
          for (const char* e : ends) {
            if (kw.text == e) {
              next();
              next();
              found = e;
              return body;
            }
          }
          body.push_back(parse_statement());
          break;
        }
        default:
          fail_at(tk, fmt::format("unexpected {}", describe(tk)));
      }
    }
  }

  StmtPtr new_stmt(Stmt::K k, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->k = k;
    s->line = at.line;
    s->col = at.col;
    return s;
  }

  StmtPtr parse_statement() {
    next();  // {%
    const Token& kw = next();
    DepthGuard guard(*this, kw);
    const std::string& w = kw.text;
    std::string found;
    if (w == "if") {
      auto s = new_stmt(Stmt::K::If, kw);
      ExprPtr c = parse_tuple(false);
      expect_block_end();
      while (true) {
        Body b = parse_body({"elif", "else", "endif"}, found, "if");
        s->branches.emplace_back(std::move(c), std::move(b));
        if (found == "elif") {
          c = parse_tuple(false);
          expect_block_end();
          continue;
        }
        if (found == "else") {
          expect_block_end();
          s->else_body = parse_body({"endif"}, found, "if");
        }
        expect_block_end();
        return s;
      }
    }
    if (w == "for") {
      auto s = new_stmt(Stmt::K::For, kw);
      bool paren = is_op("(");
      if (paren) next();
      s->targets.push_back(expect_name("a loop variable"));
      while (is_op(",")) {
        next();
        if (cur().type != Tok::Name) break;
        s->targets.push_back(expect_name("a loop variable"));
      }
      if (paren) expect_op(")");
      if (!is_name("in")) fail_at(cur(), fmt::format("expected 'in' in for loop, got {}", describe(cur())));
      next();
      s->expr = parse_tuple(false);
      if (is_name("if")) {
        next();
        s->cond = parse_expression(true);
      }
      if (is_name("recursive")) {
        next();
        s->recursive = true;
      }
      expect_block_end();
      ++loop_depth_;
      s->body = parse_body({"else", "endfor"}, found, "for");
      --loop_depth_;
      if (found == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, found, "for");
      }
      expect_block_end();
      return s;
    }
    if (w == "set") {
      std::vector<std::string> names;
      std::string attr;
      names.push_back(expect_name("a variable name"));
      if (is_op(".")) {
        next();
        attr = expect_name("an attribute name");
      } else {
        while (is_op(",")) {
          next();
          if (cur().type != Tok::Name) break;
          names.push_back(expect_name("a variable name"));
        }
      }
      if (is_op("=")) {
        next();
        auto s = new_stmt(Stmt::K::Set, kw);
        s->targets = std::move(names);
        s->attr = std::move(attr);
        s->expr = parse_tuple(true);
        expect_block_end();
        return s;
      }
      if (names.size() != 1 || !attr.empty()) fail_at(cur(), "block assignment needs a single variable name");
      auto s = new_stmt(Stmt::K::SetBlock, kw);
      s->targets = std::move(names);
      if (is_op("|")) s->expr = parse_filter_chain();
      expect_block_end();
      s->body = parse_body({"endset"}, found, "set");
      expect_block_end();
      return s;
    }
    if (w == "macro") {
      auto s = new_stmt(Stmt::K::Macro, kw);
      s->name = expect_name("a macro name");
      parse_params(s->params);
      expect_block_end();
      int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = parse_body({"endmacro"}, found, "macro");
      loop_depth_ = saved;
      expect_block_end();
      return s;
    }
    if (w == "call") {
      auto s = new_stmt(Stmt::K::CallBlock, kw);
      if (is_op("(")) parse_params(s->params);
      s->expr = parse_expression(true);
      if (s->expr->k != Expr::K::Call) fail_at(kw, "expected a macro call after 'call'");
      expect_block_end();
      int saved = loop_depth_;
      loop_depth_ = 0;
      s->body = parse_body({"endcall"}, found, "call");
      loop_depth_ = saved;
      expect_block_end();
      return s;
    }
    if (w == "filter") {
      auto s = new_stmt(Stmt::K::FilterBlock, kw);
      s->expr = parse_filter_chain(/*leading_pipe=*/false);
      expect_block_end();
      s->body = parse_body({"endfilter"}, found, "filter");
      expect_block_end();
      return s;
    }
    if (w == "break" || w == "continue") {
      if (loop_depth_ == 0) fail_at(kw, fmt::format("'{}' outside of a loop", w));
      auto s = new_stmt(w == "break" ? Stmt::K::Break : Stmt::K::Continue, kw);
      expect_block_end();
      return s;
    }
    if (w == "with") {
      auto s = new_stmt(Stmt::K::With, kw);
      while (cur().type != Tok::BlockEnd) {
        std::string target = expect_name("a variable name");
        expect_op("=");
        s->assigns.emplace_back(target, parse_expression(true));
        if (!is_op(",")) break;
        next();
      }
      expect_block_end();
      s->body = parse_body({"endwith"}, found, "with");
      expect_block_end();
      return s;
    }
    if (w == "do") {
      auto s = new_stmt(Stmt::K::Do, kw);
      s->expr = parse_tuple(true);
      expect_block_end();
      return s;
    }
    if (w == "generation") {  // HF AssistantTracker: renders its body unchanged
      auto s = new_stmt(Stmt::K::Scope, kw);
      expect_block_end();
      s->body = parse_body({"endgeneration"}, found, "generation");
      expect_block_end();
      return s;
    }
    static const char* closers[] = {"endif", "endfor", "endset",        "endmacro", "endcall", "endfilter",
                                    "elif",  "else",   "endgeneration", "endraw",   "endwith"};
    for (const char* c : closers)
      if (w == c) fail_at(kw, fmt::format("unexpected '{}' (no open block it can close)", w));
    fail_at(kw, fmt::format("unsupported or unknown tag '{}'", w));
  }

  void parse_params(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      MacroParam p;
      p.name = expect_name("a parameter name");
      if (is_op("=")) {
        next();
        p.default_value = parse_expression(true);
      } else if (!params.empty() && params.back().default_value) {
        fail_at(cur(), "non-default argument follows default argument");
      }
      params.push_back(std::move(p));
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }

  // "|f1(args)|f2" (or "f1|f2" for filter blocks) applied to a null base expression.
  ExprPtr parse_filter_chain(bool leading_pipe = true) {
    ExprPtr base;
    bool first = true;
    while (first ? (!leading_pipe || is_op("|")) : is_op("|")) {
      if (!(first && !leading_pipe)) next();
      first = false;
      base = parse_filter(std::move(base));
    }
    return base;
  }

  // ---- expressions ----

  ExprPtr parse_tuple(bool with_condexpr) {
    const Token& at = cur();
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = node(Expr::K::Tuple, at);
    t->args.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")") || is_name("if")) break;
      t->args.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, cur());
    if (!with_condexpr) return parse_or();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Token& at = next();
      auto c = node(Expr::K::Cond, at);
      c->a = std::move(e);
      c->b = parse_or();
      if (is_name("else")) {
        next();
        c->c = parse_expression(true);
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      auto n = node(Expr::K::Or, next());
      n->a = std::move(e);
      n->b = parse_and();
      e = std::move(n);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      auto n = node(Expr::K::And, next());
      n->a = std::move(e);
      n->b = parse_not();
      e = std::move(n);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this, cur());
      auto n = node(Expr::K::Not, next());
      n->a = parse_not();
      return n;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr e = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::K::Compare, at);
        cmp->a = std::move(e);
      }
      cmp->kwargs.emplace_back(op, parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(e);
  }

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr a, ExprPtr b) {
    auto n = node(Expr::K::Binary, at);
    n->name = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = next();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = next();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = next();
      e = binary(at, "**", std::move(e), parse_unary(true));
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this, cur());
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& at = next();
      e = node(at.text == "-" ? Expr::K::Neg : Expr::K::Pos, at);
      e->a = parse_unary(false);
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr literal(const Token& at, Value v) {
    auto n = node(Expr::K::Literal, at);
    n->value = std::move(v);
    return n;
  }

  ExprPtr parse_primary() {
    const Token& tk = cur();
    switch (tk.type) {
      case Tok::Name: {
        next();
        if (tk.text == "true" || tk.text == "True") return literal(tk, Value(true));
        if (tk.text == "false" || tk.text == "False") return literal(tk, Value(false));
        if (tk.text == "none" || tk.text == "None") return literal(tk, Value(nullptr));
        auto n = node(Expr::K::Name, tk);
        n->name = tk.text;
        return n;
      }
      case Tok::String: {
        std::string s;
        while (cur().type == Tok::String) s += next().text;
        return literal(tk, Value(std::move(s)));
      }
      case Tok::Int:
        next();
        return literal(tk, Value(tk.ival));
      case Tok::Float:
        next();
        return literal(tk, Value(tk.fval));
      case Tok::Op:
        if (tk.text == "(") {
          next();
          if (is_op(")")) {
            next();
            auto t = node(Expr::K::Tuple, tk);
            return t;
          }
          ExprPtr e = parse_expression(true);
          if (is_op(",")) {
            auto t = node(Expr::K::Tuple, tk);
            t->args.push_back(std::move(e));
            while (is_op(",")) {
              next();
              if (is_op(")")) break;
              t->args.push_back(parse_expression(true));
            }
            e = std::move(t);
          }
          expect_op(")");
          return e;
        }
        if (tk.text == "[") {
          next();
          auto l = node(Expr::K::List, tk);
          while (!is_op("]")) {
            l->args.push_back(parse_expression(true));
            if (!is_op(",")) break;
            next();
          }
          expect_op("]");
          return l;
        }
        if (tk.text == "{") {
          next();
          auto d = node(Expr::K::Dict, tk);
          while (!is_op("}")) {
            d->args.push_back(parse_expression(true));
            expect_op(":");
            d->args.push_back(parse_expression(true));
            if (!is_op(",")) break;
            next();
          }
          expect_op("}");
          return d;
        }
        break;
      default:
        break;
    }
    fail_at(tk, fmt::format("unexpected {}", describe(tk)));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const Token& at = next();
        if (cur().type == Tok::Name) {
          auto n = node(Expr::K::Attr, at);
          n->a = std::move(e);
          n->name = next().text;
          e = std::move(n);
        } else if (cur().type == Tok::Int) {
          auto n = node(Expr::K::Item, at);
          n->a = std::move(e);
          n->b = literal(cur(), Value(cur().ival));
          next();
          e = std::move(n);
        } else {
          fail_at(cur(), fmt::format("expected an attribute name after '.', got {}", describe(cur())));
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token& at = next();  // [
    ExprPtr parts[3];
    bool is_slice = false;
    int idx = 0;
    while (true) {
      if (is_op(":")) {
        is_slice = true;
        if (++idx > 2) fail_at(cur(), "too many ':' in slice");
        next();
        continue;
      }
      if (is_op("]")) break;
      if (parts[idx]) fail_at(cur(), fmt::format("expected ']' or ':', got {}", describe(cur())));
      parts[idx] = parse_expression(true);
    }
    next();  // ]
    if (!is_slice) {
      if (!parts[0]) fail_at(at, "empty subscript");
      auto n = node(Expr::K::Item, at);
      n->a = std::move(obj);
      n->b = std::move(parts[0]);
      return n;
    }
    auto n = node(Expr::K::Slice, at);
    n->a = std::move(obj);
    for (auto& p : parts) n->args.push_back(std::move(p));
    return n;
  }

  void parse_call_args(Expr& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail_at(cur(), "*args / **kwargs in calls are not supported");
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        std::string k = next().text;
        next();
        n.kwargs.emplace_back(k, parse_expression(true));
      } else {
        if (!n.kwargs.empty()) fail_at(cur(), "positional argument follows keyword argument");
        n.args.push_back(parse_expression(true));
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr fn) {
    auto n = node(Expr::K::Call, cur());
    n->a = std::move(fn);
    parse_call_args(*n);
    return n;
  }

  ExprPtr parse_filter(ExprPtr base) {
    const Token& at = cur();
    auto n = node(Expr::K::Filter, at);
    n->a = std::move(base);
    n->name = expect_name("a filter name");
    while (is_op(".")) {
      next();
      n->name += "." + expect_name("a filter name");
    }
    if (is_op("(")) parse_call_args(*n);
    return n;
  }

  ExprPtr parse_test(ExprPtr base) {
    const Token& at = next();  // is
    auto n = node(Expr::K::Test, at);
    n->a = std::move(base);
    if (is_name("not")) {
      next();
      n->negated = true;
    }
    n->name = expect_name("a test name");
    if (is_op("(")) {
      parse_call_args(*n);
    } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                cur().type == Tok::Float || is_op("[") || is_op("{")) &&
               !(is_name("else") || is_name("or") || is_name("and") || is_name("if") || is_name("in") ||
                 is_name("not") || is_name("is"))) {
      n->args.push_back(parse_postfix(parse_primary()));
    }
    return n;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        next();
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // Unknown filters and tests are compile errors, except inside an if statement or a
  // conditional expression ("soft" frames), where Jinja2 3.x defers the error to run time.
  void check_expr(const Expr* e, bool soft) {
    if (!e) return;
    if (e->k == Expr::K::Cond) soft = true;
    if (!soft && e->k == Expr::K::Filter && !find_filter(e->name))
      throw TemplateError("TemplateSyntaxError", fmt::format("No filter named '{}'.", e->name),
                          fmt::format("{}:{}:{}", name_, e->line, e->col));
    if (!soft && e->k == Expr::K::Test && !find_test(e->name))
      throw TemplateError("TemplateSyntaxError", fmt::format("No test named '{}'.", e->name),
                          fmt::format("{}:{}:{}", name_, e->line, e->col));
    check_expr(e->a.get(), soft);
    check_expr(e->b.get(), soft);
    check_expr(e->c.get(), soft);
    for (auto& x : e->args) check_expr(x.get(), soft);
    for (auto& kv : e->kwargs) check_expr(kv.second.get(), soft);
  }

  void check_body(const Body& body, bool soft) {
    for (auto& st : body) {
      const Stmt& s = *st;
      switch (s.k) {
        case Stmt::K::If:
          for (auto& [cond, b] : s.branches) {
            check_expr(cond.get(), true);
            check_body(b, true);
          }
          check_body(s.else_body, true);
          break;
        case Stmt::K::For:
          check_expr(s.expr.get(), soft);
          check_expr(s.cond.get(), false);
          check_body(s.body, false);
          check_body(s.else_body, false);
          break;
        case Stmt::K::Macro:
        case Stmt::K::CallBlock:
          for (auto& p : s.params) check_expr(p.default_value.get(), false);
          if (s.k == Stmt::K::CallBlock) check_expr(s.expr.get(), soft);
          check_body(s.body, false);
          break;
        case Stmt::K::With:
          for (auto& kv : s.assigns) check_expr(kv.second.get(), soft);
          check_body(s.body, false);
          break;
        case Stmt::K::SetBlock:
        case Stmt::K::FilterBlock:
        case Stmt::K::Scope:
          check_expr(s.expr.get(), false);
          check_body(s.body, false);
          break;
        default:
          check_expr(s.expr.get(), soft);
          break;
      }
    }
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t i_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens, const std::string& name) {
  return Parser(tokens, name).parse_template();
}

}  // namespace ferrum::jinja
