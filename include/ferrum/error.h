// Error reporting for ferrum: every failure a user can cause (bad file, bad flag, bad request)
// is thrown as ferrum::Error with a message that names what was wrong. Programming errors use
// FERRUM_ASSERT, which also throws (never aborts) so a server survives them.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ferrum {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when a fixed-size resource (KV cache, block pool) is exhausted; callers can defer/preempt.
class CapacityError : public Error {
 public:
  using Error::Error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ferrum

#define FERRUM_ASSERT(cond, ...)                                                              \
  do {                                                                                        \
    if (!(cond)) ::ferrum::fail("internal error at {}:{}: {} ({})", __FILE__, __LINE__, #cond, \
                                ::fmt::format(__VA_ARGS__));                                  \
  } while (0)
