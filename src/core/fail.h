// Internal error helpers over the public ferrum::Error (ferrum/error.h): fail() formats a message
// with fmt and throws it; FERRUM_ASSERT throws (never aborts) on a programming error, so a server
// survives it. Kept out of the public header so that it includes only std headers.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "ferrum/error.h"

namespace ferrum {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ferrum

#define FERRUM_ASSERT(cond, ...)                                                    \
  do {                                                                              \
    if (!(cond))                                                                    \
      ::ferrum::fail("internal error at {}:{}: {} ({})", __FILE__, __LINE__, #cond, \
                     ::fmt::format(__VA_ARGS__));                                   \
  } while (0)
