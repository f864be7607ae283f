#include "cli/token_list.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "core/fail.h"

namespace ferrum::cli {
namespace {

bool is_separator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// An item as an error message shows it: a long one, or one with a run of digits too long to read,
// shortened, so a pasted blob or a huge number does not flood the line.
std::string shown(std::string_view item) {
  size_t run = 0, longest = 0;
  for (char c : item) {
    run = (c >= '0' && c <= '9') ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  if (item.size() <= 60 && longest <= 20) return std::string(item);
  return std::string(item.substr(0, 16)) + "... (" + std::to_string(item.size()) + " characters)";
}

}  // namespace

std::string format_token_ids(std::span<const int32_t> ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

std::vector<int32_t> parse_token_ids(std::span<const std::string> args, std::string_view what) {
  std::string all;
  for (const std::string& a : args) (all += a) += ' ';
  // One pair of brackets around the whole list (a JSON array) is allowed.
  const size_t first = all.find_first_not_of(" \t\n\r"), last = all.find_last_not_of(" \t\n\r");
  if (first != std::string::npos && all[first] == '[' && all[last] == ']' && first < last) {
    all[first] = ' ';
    all[last] = ' ';
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < all.size();) {
    if (is_separator(all[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < all.size() && !is_separator(all[end])) ++end;
    const std::string_view item = std::string_view(all).substr(i, end - i);
    int64_t v = 0;
    for (char c : item) {
      if (c < '0' || c > '9') {
        std::error_code ec;  // a model path after the ids, taken for one of them
        if (std::filesystem::exists(std::string(item), ec))
          fail("{}: '{}' is not a token id (a file: give the model before the ids)", what, shown(item));
        fail("{}: '{}' is not a token id", what, shown(item));
      }
      v = v * 10 + (c - '0');
      if (v > std::numeric_limits<int32_t>::max())
        fail("{}: {} is too large for a token id", what, shown(item));
    }
    ids.push_back(static_cast<int32_t>(v));
    i = end;
  }
  if (ids.empty()) fail("{}: no token ids given", what);
  return ids;
}

void check_token_ids(std::span<const int32_t> ids, std::string_view what, int64_t n_vocab) {
  for (int32_t id : ids)
    if (id < 0 || id >= n_vocab)
      fail("{}: {} is not in the vocabulary (token ids are 0 to {})", what, id, n_vocab - 1);
}

}  // namespace ferrum::cli
