// Helpers shared by the test binaries: fixture paths, .npy loading, running the CLI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ferrum/error.h"

namespace ferrum::test {

// The shell command that runs this test binary again (quoted; under FERRUM_TEST_EMULATOR, e.g.
// qemu-aarch64 in a cross build, through it).
std::string self_command();
// Absolute path of a file under tests/data.
std::string data_path(const std::string& rel);
// A fresh temporary directory under /tmp, removed with its contents when the test process exits.
std::string temp_dir();
// The whole file as bytes ("" when it cannot be read).
std::string read_text(const std::string& path);
// The model bundled with the sources (models/stories260K.gguf).
std::string bundled_model();

// Built with ASan or TSan (Open MPI's library is not built for the sanitizers: MPI tests skip).
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

struct Npy {
  std::vector<int64_t> shape;
  std::vector<float> data;  // float32 C-order
};
// Reads a little-endian <f4 C-order .npy file (formats/npy.h; throws ferrum::Error naming a bad
// file). Compressed fixtures go through unxz() first.
Npy load_npy(const std::string& path);
// The bytes of a .npy file with this header dict (padded as NumPy pads it) and payload, for tests
// of bad files: npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", data).
std::string npy_bytes(const std::string& header_dict, const std::string& payload, int major = 1);

// Decompresses tests/data/<rel>.xz (or returns the plain file if present) into a cache dir and
// returns the path of the uncompressed file.
std::string unxz(const std::string& rel);

// Copies a file so that readers in parallel test processes never see it half-written: the copy
// goes to a temporary name and is renamed over `to`.
void copy_file_atomic(const std::string& from, const std::string& to);

// Sets (value != nullptr) or unsets an environment variable for a scope and restores it after:
// CTest runs one test per process, but a whole binary run shares the environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

struct RunResult {
  int exit_code;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the ferrum binary with the given argument string (shell-quoted by the caller).
RunResult run_ferrum(const std::string& args);

// The message of the ferrum::Error that f throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ferrum::test
