// The chat page `ferrum serve` answers at / (webui/: HTML, JavaScript, CSS), compiled into the
// binary so it works on a machine without internet; `--no-webui` turns it off.
#pragma once

#include <span>
#include <string_view>

namespace ferrum::server {

struct WebAsset {
  std::string_view path, content_type, body;
};

// Every file of the page, by the path it is served at ("/", "/webui/app.js", ...).
std::span<const WebAsset> web_assets();

inline const WebAsset* find_web_asset(std::string_view path) {
  for (const WebAsset& a : web_assets())
    if (a.path == path || (path == "/index.html" && a.path == "/")) return &a;
  return nullptr;
}

}  // namespace ferrum::server
