#include "grammar/grammar_cache.h"

#include <nlohmann/json.hpp>

#include "core/fail.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace ferrum::grammar {

Grammar compile_spec(const GrammarSpec& spec) {
  switch (spec.kind) {
    case GrammarSpec::Kind::Gbnf:
      return compile_gbnf(spec.text);
    case GrammarSpec::Kind::JsonObject:
      return compile_gbnf(json_object_gbnf());
    case GrammarSpec::Kind::JsonSchema: {
      nlohmann::json schema;
      try {
        schema = nlohmann::json::parse(spec.text);
      } catch (const nlohmann::json::exception& e) {
        fail("json_schema: not valid JSON: {}", e.what());
      }
      return compile_gbnf(json_schema_gbnf(schema));
    }
  }
  fail("grammar: unknown kind");
}

std::shared_ptr<const CompiledGrammar> GrammarCache::get(const GrammarSpec& spec) {
  std::string key = std::to_string(static_cast<int>(spec.kind)) + ":" + spec.text;
  std::lock_guard lk(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  auto grammar = std::make_shared<const Grammar>(compile_spec(spec));
  Matcher probe(grammar);  // the start state expands within the matcher's bounds (or throws here)
  if (!vocab_) vocab_ = TokenVocab::from_tokenizer(tok_);
  auto g = bind(std::move(grammar), vocab_);
  ++compiled_;
  lru_.emplace_front(key, g);
  index_[std::move(key)] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return g;
}

size_t GrammarCache::compiled_count() const {
  std::lock_guard lk(mu_);
  return compiled_;
}

}  // namespace ferrum::grammar
