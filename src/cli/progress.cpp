#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

#include "cli/format_bytes.h"

namespace ferrum::cli {

using Clock = std::chrono::steady_clock;

ProgressDisplay::ProgressDisplay(bool quiet, FILE* out, int terminal)
    : quiet_(quiet), terminal_(terminal < 0 ? ::isatty(::fileno(out)) != 0 : terminal != 0), out_(out) {}

ProgressDisplay::~ProgressDisplay() {
  end_line();
}

void ProgressDisplay::end_line() {
  if (drawn_) std::fputc('\n', out_);
  drawn_ = false;
}

std::string ProgressDisplay::status(const ProgressUpdate& u, double seconds) const {
  const double rate = seconds > 0 ? u.done / seconds : 0;
  std::string s = fmt::format("{} of {}, {}/{} {}", human_bytes(u.done), human_bytes(u.total), u.items,
                              u.n_items, u.unit);
  if (rate > 0) {
    s += fmt::format(", {}/s", human_bytes(rate));
    if (u.done < u.total) s += fmt::format(", {:.0f} s left", std::ceil((u.total - u.done) / rate));
  }
  return s;
}

void ProgressDisplay::update(const ProgressUpdate& u) {
  if (quiet_ || u.total == 0) return;
  const auto now = Clock::now();
  if (u.stage != stage_) {  // a new stage starts its own count
    end_line();
    stage_ = u.stage;
    start_ = now;
    last_draw_ = {};
    next_tenth_ = 1;
  }
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const int pct = static_cast<int>(100.0 * u.done / u.total);
  if (terminal_) {
    if (now - last_draw_ < std::chrono::milliseconds(100) && u.done < u.total) return;
    last_draw_ = now;
    constexpr int kWidth = 24;
    const int fill = pct * kWidth / 100;
    std::fprintf(out_, "\r%s [%s%s] %3d%% %s\x1b[K", stage_.c_str(), std::string(fill, '#').c_str(),
                 std::string(kWidth - fill, '.').c_str(), pct, status(u, seconds).c_str());
    drawn_ = true;
    if (u.done >= u.total) end_line();
  } else {
    if (pct < next_tenth_ * 10) return;
    std::fprintf(out_, "%s: %3d%% (%s)\n", stage_.c_str(), pct / 10 * 10, status(u, seconds).c_str());
    next_tenth_ = pct / 10 + 1;
  }
  std::fflush(out_);
}

void ProgressDisplay::message(const std::string& line) {
  if (quiet_) return;
  end_line();
  std::fprintf(out_, "%s\n", line.c_str());
}

}  // namespace ferrum::cli
