// Structured-output grammars: a mode byte, then a grammar ⧉ an output. Mode bit 0 picks GBNF or
// a JSON Schema (the text as a request's response_format would carry it). A grammar that
// compiles is run on the output bytes, and token masks over a small synthetic vocabulary are
// computed at every step both from the stack-top cache and by a full trie walk: a difference, or
// an allowed token the matcher then rejects, is a finding (abort).
#include <cstdint>
#include <cstdlib>

#include "ferrum/error.h"
#include "fuzz_util.h"
#include "grammar/grammar_cache.h"

using namespace ferrum;
using namespace ferrum::grammar;

namespace {

std::shared_ptr<const TokenVocab> vocab() {
  static const auto v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    for (const char* t :
         {"{\"", "\":", "\", \"", "true",  "null",     "12",           "-1",          "  ",   "\n ", "[]",
          "{}",  "ab",  "abc",    "\\u00", "\xC3\xA9", "\xE2\x82\xAC", "<tool_call>", " the", "\"}", "\"]"})
      bytes.emplace_back(t);
    bytes.emplace_back();  // a control token: never allowed
    return std::make_shared<const TokenVocab>(std::move(bytes),
                                              std::vector<int32_t>{static_cast<int32_t>(256 + 20)}, false);
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const auto parts = fuzz::split_parts(data + 1, size - 1, 2);
  GrammarSpec spec{mode & 1 ? GrammarSpec::Kind::JsonSchema : GrammarSpec::Kind::Gbnf, std::string(parts[0])};
  std::shared_ptr<const CompiledGrammar> g;
  try {
    auto grammar = std::make_shared<const Grammar>(compile_spec(spec));
    Matcher probe(grammar);
    g = bind(grammar, vocab());
  } catch (const Error&) {
    return 0;
  }
  const std::string_view out = parts.size() > 1 ? parts[1] : std::string_view();
  try {
    TokenMask mask(g, false);
    std::vector<uint64_t> cached, walked;
    const int n = g->vocab->size();
    for (size_t i = 0; i <= out.size() && i < 64; ++i) {
      mask.fill(cached, n);
      mask.compute_walk(walked, n);
      if (cached != walked) std::abort();
      for (int32_t id = 0; id < n; ++id)
        if (bit_set(cached, id) && !g->vocab->is_eog(id)) {
          if (!mask.accept_token(id)) std::abort();
          mask.rollback(1);
        }
      if (i == out.size() || !mask.accept_token(static_cast<uint8_t>(out[i]))) break;
    }
  } catch (const Error&) {
  }
  return 0;
}
