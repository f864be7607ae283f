// Syntax tree of a parsed Jinja template: expressions and statements as tagged nodes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/jinja/value.h"

namespace ferrum::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class K {
    Literal,  // value
    Name,     // name
    List,     // args
    Tuple,    // args
    Dict,     // args: key, value, key, value...
    Attr,     // a.name
    Item,     // a[b]
    Slice,    // a[args0:args1:args2] (null entries = omitted)
    Call,     // a(args, kwargs)
    Filter,   // a | name(args, kwargs); a null for filter blocks
    Test,     // a is [not] name(args, kwargs)
    Neg,      // -a
    Pos,      // +a
    Not,      // not a
    And,      // a and b
    Or,       // a or b
    Binary,   // a op b (+ - * / // % ** ~)
    Compare,  // a op b (== != < <= > >= in notin)
    Cond,     // a if b else c (c may be null)
  };
  K k;
  int line = 0, col = 0;
  Value value;
  std::string name;  // Name/Attr/Filter/Test name, operator for Binary/Compare
  bool negated = false;
  ExprPtr a, b, c;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum class K {
    Text,
    Output,
    If,
    For,
    Set,
    SetBlock,
    Macro,
    CallBlock,
    FilterBlock,
    Break,
    Continue,
    Do,
    Scope,
    With
  };
  K k;
  int line = 0, col = 0;
  std::string text;  // Text
  ExprPtr expr;      // Output / Set value / For iterable / Do / CallBlock call / FilterBlock filter chain
  std::vector<std::string> targets;                // For / Set names (several: tuple unpacking)
  std::string attr;                                // Set ns.attr: targets[0] = ns, attr = attribute
  ExprPtr cond;                                    // For "if" filter
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: (condition, body)...
  Body body;                       // For / SetBlock / Macro / CallBlock / FilterBlock / Scope / If-else
  Body else_body;                  // For else / If else
  std::string name;                // Macro name
  std::vector<MacroParam> params;  // Macro / CallBlock (caller) parameters
  bool recursive = false;          // For ... recursive
  std::vector<std::pair<std::string, ExprPtr>> assigns;  // With a = x, b = y
};

}  // namespace ferrum::jinja
