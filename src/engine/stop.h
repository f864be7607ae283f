// Stop strings for streamed generation: text is appended piece by piece (as the StreamDecoder
// releases it) and only the part that can no longer be the start of a stop string is released.
// A stop string split over several tokens is still found, and is never emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferrum {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {});

  // Adds generated text; returns the text that is now safe to emit. After a stop string is
  // found, stopped() is true and the returned text ends right before it.
  std::string push(std::string_view text);
  // Text held back at the end of generation (a partial stop-string match that never completed).
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that was found (empty before).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;  // text not yet emitted (a possible stop-string prefix)
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace ferrum
