// A models folder's preset file (models.json, server/models_dir.h) and Ollama's keep_alive values:
// the file is written into a folder holding one (empty) model file and scanned as `ferrum serve
// --models-dir` scans it; each preset is applied to a chat body and a completion body; every JSON
// value of the file is tried as a keep_alive. Every failure must be a ferrum::Error; anything else
// escaping is a finding.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "ferrum/error.h"
#include "server/json_body.h"
#include "server/model_pool.h"
#include "server/models_dir.h"

using namespace ferrum;
namespace fs = std::filesystem;

namespace {

const fs::path& folder() {
  static const fs::path dir = [] {
    fs::path d = fs::path("/dev/shm") / ("ferrum-fuzz-models-" + std::to_string(getpid()));
    fs::create_directories(d / "sub");
    std::ofstream(d / "stories.gguf") << "";
    std::ofstream(d / "sub" / "b.gguf") << "";
    return d;
  }();
  return dir;
}

void keep_alive_of_every_value(const nlohmann::json& j, int depth) {
  try {
    (void)server::parse_keep_alive(j);
  } catch (const Error&) {
  }
  if (depth < 4 && j.is_structured())
    for (const auto& v : j) keep_alive_of_every_value(v, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::ofstream(folder() / "models.json", std::ios::binary | std::ios::trunc) << text;
  try {
    for (const server::ModelSource& m : server::scan_models_dir(folder().string())) {
      nlohmann::json chat = {{"messages", nlohmann::json::array({{{"role", "user"}, {"content", "Hi"}}})}};
      server::apply_preset(m.preset, chat, true);
      nlohmann::json completion = {{"prompt", "Hi"}};
      server::apply_preset(m.preset, completion, false);
    }
  } catch (const Error&) {
  }
  try {
    keep_alive_of_every_value(server::parse_json_body(text), 0);
  } catch (const Error&) {
  }
  return 0;
}
