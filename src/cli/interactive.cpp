#include "cli/interactive.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

namespace ferrum::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
struct sigaction g_previous;

void on_sigint(int) {
  g_interrupted = 1;
}

// While an answer streams, SA_RESTART keeps the writes to stdout whole; at the prompt a Ctrl-C
// must end the blocking read instead.
void install(bool restart, struct sigaction* previous) {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, previous);
}

// Bytes read from stdin but not yet returned as a line.
std::string g_pending;

// One line without its '\n'; nullopt at end of input or on Ctrl-C. Reads with read(2) so that a
// signal interrupts the wait (stdio would retry or latch an error).
std::optional<std::string> read_line() {
  while (true) {
    const size_t nl = g_pending.find('\n');
    if (nl != std::string::npos) {
      std::string line = g_pending.substr(0, nl);
      g_pending.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    char buf[4096];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      if (g_interrupted) return std::nullopt;
      continue;
    }
    if (n <= 0) {  // end of input: a last line without '\n' still counts
      if (g_pending.empty()) return std::nullopt;
      std::string line;
      line.swap(g_pending);
      return line;
    }
    g_pending.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

InterruptScope::InterruptScope() {
  install(true, &g_previous);
  g_interrupted = 0;
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_previous, nullptr);
}

bool take_interrupt() {
  if (!g_interrupted) return false;
  g_interrupted = 0;
  return true;
}

std::optional<std::string> read_message(const char* prompt) {
  std::fprintf(stderr, "%s", prompt);
  std::fflush(stderr);
  take_interrupt();  // a Ctrl-C that stopped the last answer does not end the session
  install(false, nullptr);
  std::string message;
  while (true) {
    std::optional<std::string> line = read_line();
    if (!line) {
      std::fputc('\n', stderr);
      return std::nullopt;
    }
    if (line->empty() || line->back() != '\\') {
      install(true, nullptr);
      return message + *line;
    }
    line->pop_back();
    message += *line + "\n";
    std::fprintf(stderr, ". ");
    std::fflush(stderr);
  }
}

}  // namespace ferrum::cli
