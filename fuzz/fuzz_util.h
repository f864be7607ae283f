// Shared by the fuzz targets: the loaders read files, so each input is written to files in a
// per-process scratch directory (under /dev/shm when it exists, so no disk I/O per execution).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::fuzz {

// The scratch directory of this process (created on first use).
const std::string& scratch_dir();

// Writes bytes to scratch_dir()/name and returns the path.
std::string write_file(const std::string& name, std::string_view bytes);

// Removes scratch_dir()/name if it exists.
void remove_file(const std::string& name);

// Splits an input into parts at each occurrence of kSeparator (a line that seldom occurs in
// real files; it is in every dictionary, so the fuzzer can move it around).
inline constexpr std::string_view kSeparator = "\n#--ferrum-fuzz-part--#\n";
std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t max_parts);

}  // namespace ferrum::fuzz
