// The command line's argument parser: the input is an argv vector (arguments separated by NUL
// bytes, at most 64), parsed by the real `ferrum` parser (every command, flag and check) without
// running the command. Parsing must end in a ready command, help or an error line, never in an
// abort, a sanitizer report or an exception escaping parse().
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/app.h"

namespace {

// Help texts and error lines would flood the fuzzer's log: they go to /dev/null while parse() runs
// (FUZZ_CLI_VERBOSE=1 keeps them, e.g. to see what a finding printed).
class Silence {
 public:
  Silence() {
    static const bool verbose = std::getenv("FUZZ_CLI_VERBOSE") != nullptr;
    if (verbose) return;
    std::fflush(stdout);
    std::fflush(stderr);
    out_ = dup(STDOUT_FILENO);
    err_ = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
  }
  ~Silence() {
    if (out_ < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(out_, STDOUT_FILENO);
    dup2(err_, STDERR_FILENO);
    close(out_);
    close(err_);
  }

 private:
  int out_ = -1, err_ = -1;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
  // One parser for every input (building it costs far more than a parse); CLI11 clears what a
  // parse left before the next, and parsing reads none of the values earlier ones stored.
  static ferrum::cli::Cli cli;
  const Silence quiet;
  cli.parse(static_cast<int>(argv.size()), argv.data());
  return 0;
}
