#include "fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ferrum::fuzz {

const std::string& scratch_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path d = base / ("ferrum-fuzz-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d.string();
  }();
  return dir;
}

std::string write_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the harness itself is broken, not the input
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
  return path;
}

void remove_file(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(scratch_dir() + "/" + name, ec);
}

std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t max_parts) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t p = in.find(kSeparator);
    if (p == std::string_view::npos) break;
    parts.push_back(in.substr(0, p));
    in.remove_prefix(p + kSeparator.size());
  }
  parts.push_back(in);
  return parts;
}

}  // namespace ferrum::fuzz
