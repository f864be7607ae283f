#include "loading/fingerprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/fail.h"
#include "core/hash.h"

namespace ferrum {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kEdge = 1 << 20;  // bytes hashed at each end of a file

std::string file_print(const fs::path& p) {
  std::error_code ec;
  const uint64_t size = fs::file_size(p, ec);
  std::ifstream in(p, std::ios::binary);
  if (ec || !in) fail("{}: cannot read the model file", p.string());
  std::vector<uint8_t> buf(std::min(size, kEdge));
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t at : {uint64_t{0}, size - buf.size()}) {
    in.seekg(static_cast<std::streamoff>(at));
    in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    if (!in) fail("{}: cannot read the model file", p.string());
    h = fnv1a64(buf, h);
  }
  return fmt::format("{}:{}:{:016x}", p.filename().string(), size, h);
}

}  // namespace

std::string model_fingerprint(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return file_print(path);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file(ec) && (ext == ".safetensors" || ext == ".json" || ext == ".gguf" || ext == ".bin"))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string out;
  for (const fs::path& f : files) out += (out.empty() ? "" : ",") + file_print(f);
  return out;
}

}  // namespace ferrum
