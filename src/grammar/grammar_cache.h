// Compiling the grammars that requests ask for, once each: an LRU of compiled grammars keyed by
// (kind, text), bound to one tokenizer's vocabulary (built on first use). Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "grammar/token_mask.h"

namespace ferrum {
class Tokenizer;
}

namespace ferrum::grammar {

struct GrammarSpec {
  enum class Kind { Gbnf, JsonSchema, JsonObject };
  Kind kind = Kind::Gbnf;
  std::string text;  // GBNF text, or the schema as JSON text; unused for JsonObject
};

// The grammar of a spec (no vocabulary). Throws ferrum::Error naming the problem.
Grammar compile_spec(const GrammarSpec& spec);

class GrammarCache {
 public:
  explicit GrammarCache(const Tokenizer& tok, size_t capacity = 64) : tok_(tok), capacity_(capacity) {}
  std::shared_ptr<const CompiledGrammar> get(const GrammarSpec& spec);
  size_t compiled_count() const;  // compilations so far (cache misses)

 private:
  const Tokenizer& tok_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::shared_ptr<const TokenVocab> vocab_;
  std::list<std::pair<std::string, std::shared_ptr<const CompiledGrammar>>> lru_;  // most recent first
  std::map<std::string, decltype(lru_)::iterator> index_;
  size_t compiled_ = 0;
};

}  // namespace ferrum::grammar
