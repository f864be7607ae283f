#include "cli/flag_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>

#include "core/fail.h"

namespace ferrum::cli {
namespace {

bool parse_int(const std::string& s, int64_t& v) {
  const char* b = s.data();
  const char* e = b + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  return ec == std::errc() && p == e && b != e;
}

bool parse_real(const std::string& s, double& v) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

// Bounds as people read them: 1048576 stays, 1073741824 becomes 2^30.
std::string show(double x) {
  for (int p = 20; p <= 62; ++p)
    if (x == std::ldexp(1.0, p)) return fmt::format("2^{}", p);
  return fmt::format("{}", x);
}

std::string range_words(const char* kind, double lo, double hi, bool lo_open) {
  if (lo_open) return fmt::format("expects {} above {} and at most {}", kind, show(lo), show(hi));
  return fmt::format("expects {} from {} to {}", kind, show(lo), show(hi));
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f)
      out += c;
    else if (c == '\n')
      out += "\\n";
    else
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  return out;
}

std::string shown_value(const std::string& value) {
  constexpr size_t kShown = 20;  // no longer numbers than a 64-bit one
  if (value.size() <= kShown) return "'" + one_line(value) + "'";
  return "'" + one_line(value.substr(0, kShown)) + "...' (" + std::to_string(value.size()) + " characters)";
}

CLI::Validator whole(int64_t lo, int64_t hi) {
  const std::string words =
      range_words("a whole number", static_cast<double>(lo), static_cast<double>(hi), false);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        int64_t v = 0;
        if (!parse_int(s, v) || v < lo || v > hi) return words + ", got " + shown_value(s);
        s = std::to_string(v);  // CLI11 would read a leading 0 as octal: "010" is ten here
        return {};
      },
      fmt::format("{}..{}", show(static_cast<double>(lo)), show(static_cast<double>(hi))), kWhole);
}

CLI::Validator whole(const ParamRange& r) {
  return whole(static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi));
}

CLI::Validator real(double lo, double hi, bool lo_open) {
  const std::string words = range_words("a number", lo, hi, lo_open);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        double v = 0;
        if (!parse_real(s, v) || v < lo || v > hi || (lo_open && v == lo))
          return words + ", got " + shown_value(s);
        return {};
      },
      fmt::format("{}{}..{}", lo_open ? ">" : "", show(lo), show(hi)), kReal);
}

CLI::Validator real(const ParamRange& r, bool lo_open) {
  return real(r.lo, r.hi, lo_open);
}

CLI::Validator one_of(std::vector<std::string> choices) {
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        for (const std::string& c : choices)
          if (s == c) return {};
        return "expects " + list + ", got " + shown_value(s);
      },
      list, kChoice);
}

CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& s) -> std::string { return s.empty() ? "expects a non-empty text" : ""; }, "", kText);
}

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        int64_t v = 0;
        if (parse_int(s, v) && v == -1) return {};
        uint64_t u = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), u);
        if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) return {};
        return "expects a whole number from 0 to 2^64-1, or -1 for a random seed, got " + shown_value(s);
      },
      "-1 (random) or 0..2^64-1", kSeed);
}

std::string read_flag_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read '{}'", flag, path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) | rd();
}

uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text == "-1") return random_seed();
  uint64_t u = 0;
  std::from_chars(text.data(), text.data() + text.size(), u);
  return u;
}

}  // namespace ferrum::cli
