#include "cli/format_bytes.h"

#include <fmt/format.h>

namespace ferrum::cli {

std::string human_bytes(double b) {
  if (b >= 1024.0 * 1048576) return fmt::format("{:.2f} GiB", b / (1024.0 * 1048576));
  if (b >= 1048576) return fmt::format("{:.1f} MiB", b / 1048576);
  return fmt::format("{:.1f} KiB", b / 1024);
}

}  // namespace ferrum::cli
