// Errors of the Jinja engine. Everything leaves the engine as TemplateError (a ferrum::Error):
// syntax errors name the template line and column, render errors the line and the Python-style
// exception type and message (e.g. "TypeError: argument of type 'NoneType' is not iterable").
#pragma once

#include <fmt/format.h>

#include <string>

#include "core/fail.h"

namespace ferrum::jinja {

class TemplateError : public ferrum::Error {
 public:
  // where: "name:line:col" or "name:line"; type: "TemplateSyntaxError", "TypeError", ...
  TemplateError(std::string type, std::string message, const std::string& where)
      : ferrum::Error(fmt::format("{}: {}: {}", where, type, message)),
        type_(std::move(type)),
        message_(std::move(message)) {}
  const std::string& type() const { return type_; }
  const std::string& message() const { return message_; }

 private:
  std::string type_, message_;
};

// Raised inside the interpreter and builtins; the template adds the location and rethrows it as
// TemplateError.
struct Raise {
  std::string type;
  std::string message;
};

[[noreturn]] inline void raise(std::string type, std::string message) {
  throw Raise{std::move(type), std::move(message)};
}

template <typename... Args>
[[noreturn]] void raise_type_error(fmt::format_string<Args...> f, Args&&... args) {
  throw Raise{"TypeError", fmt::format(f, std::forward<Args>(args)...)};
}

}  // namespace ferrum::jinja
