// A parsed Jinja template, rendered with Hugging Face's Jinja2 conventions (see lexer.h).
//
//   jinja::Template t("Hello {{ name | upper }}!", "greeting");
//   Value vars = Value::dict();
//   vars.dict_obj().set("name", Value("world"));
//   std::string s = t.render(vars);   // "Hello WORLD!"
//
// Construction throws TemplateError for syntax errors ("greeting:1:10: TemplateSyntaxError: ...");
// render() throws TemplateError for runtime errors, with the Python exception type and message.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "template/jinja/ast.h"
#include "template/jinja/error.h"
#include "template/jinja/value.h"

namespace ferrum::jinja {

class Template {
 public:
  explicit Template(std::string_view source, std::string name = "template");

  // vars: a dict of top-level variables (undefined/none = no variables). Default globals
  // (range, namespace, dict, joiner) are available unless vars overrides them.
  std::string render(const Value& vars) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const Body> body_;
};

}  // namespace ferrum::jinja
