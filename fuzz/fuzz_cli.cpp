// The command line's argument parser: the input is an argv vector (arguments separated by NUL
// bytes, at most 64), parsed by the real `ferrum` parser (every command, flag and check) without
// running the command. Parsing must end in a ready command, help or an error line, never in an
// abort, a sanitizer report or an exception escaping parse().
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/app.h"

namespace {

// Help and error lines would flood the fuzzer's own output.
void silence_output() {
  static const bool once = [] {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    return true;
  }();
  (void)once;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  silence_output();
  std::vector<std::string> args{"ferrum"};
  std::string cur;
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty() && args.size() < 64) args.push_back(cur);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  ferrum::cli::Cli cli;
  cli.parse(static_cast<int>(argv.size()), argv.data());
  return 0;
}
