// The error of a malformed chat request part (messages, tools) or a template that raises.
#pragma once

#include <string>

#include "core/fail.h"

namespace ferrum::chat {

// `param` names the field ("messages[2].role", "tools[0].function.name").
class ChatError : public Error {
 public:
  ChatError(std::string param, const std::string& message) : Error(message), param(std::move(param)) {}
  std::string param;
};

[[noreturn]] inline void bad_field(const std::string& param, const std::string& msg) {
  throw ChatError(param, msg);
}

}  // namespace ferrum::chat
