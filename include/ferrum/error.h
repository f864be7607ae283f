// Error reporting for ferrum: every failure a user can cause (bad file, bad flag, bad request)
// is thrown as ferrum::Error with a message that names what was wrong. Programming errors
// (internal checks) also throw ferrum::Error, never abort, so a server survives them.
#pragma once

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

}  // namespace ferrum
