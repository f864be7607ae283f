// Byte counts for people: "1.5 MiB", "3.20 GiB".
#pragma once

#include <string>

namespace ferrum::cli {

std::string human_bytes(double bytes);

}  // namespace ferrum::cli
