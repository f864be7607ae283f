// Terminal input for `ferrum run`'s interactive modes, as llama-cli and Ollama behave: Ctrl-C
// while an answer is generated stops that answer (the generation loop polls interrupted()); at the
// prompt it ends the session, as Ctrl-D does. A line ending in a backslash continues on the next.
#pragma once

#include <optional>
#include <string>

namespace ferrum::cli {

// Catches SIGINT while alive (the previous handler is restored after).
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// True once after each Ctrl-C (clears the flag).
bool take_interrupt();

// Shows `prompt` on stderr and reads one message from stdin: lines joined while they end in '\'.
// nullopt at end of input or on Ctrl-C at the prompt.
std::optional<std::string> read_message(const char* prompt);

}  // namespace ferrum::cli
