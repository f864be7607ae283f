#include "template/jinja/template.h"

#include <fmt/format.h>

#include "template/jinja/builtins.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/lexer.h"
#include "template/jinja/parser.h"

namespace ferrum::jinja {

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
  body_ = std::make_shared<const Body>(parse(lex(source, name_), name_));
}

std::string Template::render(const Value& vars) const {
  Interpreter in;
  try {
    DictObj globals;
    add_default_globals(globals);
    for (auto& [k, v] : globals.items) in.root().set(k.str(), v);
    if (vars.is_dict()) {
      for (auto& [k, v] : vars.dict_obj().items) {
        if (!k.is_string()) throw TemplateError("TypeError", "render variable names must be strings", name_);
        in.root().set(k.str(), v);
      }
    } else if (!vars.is_undefined() && !vars.is_none()) {
      throw TemplateError("TypeError", "render variables must be a dict, got " + vars.type_name(), name_);
    }
    std::string out;
    in.run(*body_, out);
    return out;
  } catch (const Raise& r) {
    throw TemplateError(r.type, r.message, fmt::format("{}:{}", name_, in.line()));
  }
}

}  // namespace ferrum::jinja
