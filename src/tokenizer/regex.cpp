#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/fail.h"
#include "core/utf8.h"

namespace ferrum::tok {

namespace {

struct MatchData {
  pcre2_match_data* md = nullptr;
  ~MatchData() {
    if (md) pcre2_match_data_free(md);
  }
};

// One match-data block per thread, reused across calls (no allocation per pre-token).
pcre2_match_data* thread_match_data() {
  thread_local MatchData data;
  if (!data.md) data.md = pcre2_match_data_create(16, nullptr);
  return data.md;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  auto* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    fail("pre-tokenizer regex '{}': {} at offset {}", pattern, reinterpret_cast<char*>(msg), off);
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is absent
  code_ = code;
}

Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0;
  while (pos <= s.size()) {
    int rc = pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      fail("pre-tokenizer regex '{}': match failed at byte {}: {}", pattern_, pos,
           reinterpret_cast<char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {
      // Empty match: skip one character (never produced by the tokenizer patterns, but be safe).
      pos = e + 1;
      while (pos < s.size() && utf8::is_continuation(static_cast<uint8_t>(s[pos]))) ++pos;
      continue;
    }
    out.emplace_back(b, e);
    pos = e;
  }
}

}  // namespace ferrum::tok
