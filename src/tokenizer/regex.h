// Thin PCRE2 wrapper (UTF + Unicode properties, JIT-compiled) used by the pre-tokenizers.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferrum::tok {

class Regex {
 public:
  explicit Regex(const std::string& pattern);  // throws ferrum::Error on a bad pattern
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends [begin, end) byte ranges of all non-overlapping matches in s (valid UTF-8) to out.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace ferrum::tok
