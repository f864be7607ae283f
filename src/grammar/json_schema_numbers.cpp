// Integer ranges as grammar expressions: [lo, hi] split by digit count, each piece the classic
// digit-by-digit construction (e.g. 17..42 = "1" [7-9] | [2-3] [0-9] | "4" [0-2]).
#include <string>

#include "grammar/json_schema.h"

namespace ferrum::grammar {

namespace {

constexpr int kMaxDigits = 16;  // the most digits a generated number has

std::string digit_class(char a, char b) {
  if (a == b) return std::string("\"") + a + "\"";
  if (a == '0' && b == '9') return "[0-9]";
  return std::string("[") + a + "-" + b + "]";
}

// Every digit string of x's length between x and y (x <= y, same length).
std::string same_length(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 0) return "\"\"";
  if (x == y) return gbnf_literal(x);
  if (n == 1) return digit_class(x[0], y[0]);
  const std::string xr = x.substr(1), yr = y.substr(1);
  if (x[0] == y[0]) return digit_class(x[0], x[0]) + " " + same_length(xr, yr);
  const std::string zeros(n - 1, '0'), nines(n - 1, '9');
  const std::string any_rest = "[0-9]{" + std::to_string(n - 1) + "}";
  if (xr == zeros && yr == nines) return digit_class(x[0], y[0]) + " " + any_rest;
  std::string out = "(" + digit_class(x[0], x[0]) + " " + same_length(xr, nines);
  if (y[0] - x[0] > 1) out += " | " + digit_class(x[0] + 1, y[0] - 1) + " " + any_rest;
  out += " | " + digit_class(y[0], y[0]) + " " + same_length(zeros, yr) + ")";
  return out;
}

// Non-negative integers in [a, b] (b absent: up to kMaxDigits digits), as alternatives.
void non_negative(int64_t a, std::optional<int64_t> b, std::vector<std::string>& alts) {
  if (b && *b < a) return;
  const std::string as = std::to_string(a);
  const size_t max_len = b ? std::to_string(*b).size() : kMaxDigits;
  for (size_t len = as.size(); len <= max_len; ++len) {
    const std::string lo = len == as.size() ? as : (len == 1 ? "0" : "1" + std::string(len - 1, '0'));
    if (!b && len > as.size()) {  // every longer number
      alts.push_back("[1-9] [0-9]{" + std::to_string(len - 1) + "," + std::to_string(kMaxDigits - 1) + "}");
      return;
    }
    const std::string hi = b && len == max_len ? std::to_string(*b) : std::string(len, '9');
    alts.push_back(same_length(lo, hi));
  }
}

std::string join(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  if (!hi || *hi >= 0) non_negative(lo ? std::max<int64_t>(*lo, 0) : 0, hi, alts);
  if (!lo || *lo < 0) {  // -n for n in [max(-hi, 1), -lo]
    std::vector<std::string> neg;
    const int64_t from = hi ? std::max<int64_t>(-*hi, 1) : 1;
    non_negative(from, lo ? std::optional<int64_t>(-*lo) : std::nullopt, neg);
    if (!neg.empty()) alts.push_back("\"-\" " + join(neg));
  }
  if (alts.empty()) return "";
  return join(alts);
}

}  // namespace ferrum::grammar
