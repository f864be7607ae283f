#include "engine/stop.h"

#include <algorithm>
#include <utility>

namespace ferrum {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stops_) max_len_ = std::max(max_len_, s.size());
}

std::string StopMatcher::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // Earliest complete match wins.
  size_t best = std::string::npos;
  for (const auto& s : stops_)
    if (const size_t at = held_.find(s); at < best) {
      best = at;
      matched_ = s;
    }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string. Stop strings are
  // valid UTF-8, so such a suffix never starts inside a character.
  size_t keep = 0;
  const size_t max_keep = std::min(held_.size(), max_len_ - 1);
  for (size_t k = max_keep; k > 0; --k) {
    const std::string_view tail(held_.data() + held_.size() - k, k);
    if (std::any_of(stops_.begin(), stops_.end(),
                    [&](const std::string& s) { return s.starts_with(tail); })) {
      keep = k;
      break;
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace ferrum
