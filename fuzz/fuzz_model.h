// What the file-format fuzz targets do with whatever loaded: tokenize and detokenize, render the
// chat template, and build and run the model when it is small.
#pragma once

#include <string>
#include <string_view>

#include "ferrum/tokenizer.h"
#include "loading/loader.h"

namespace ferrum::fuzz {

// Model options that keep every allocation small: one thread, a 32-token KV cache.
ModelOptions small_options();

// Whether a config and its weights are small enough to build and run in a fuzzer's memory limit.
// Larger models are loaded as far as their config and tensor checks, not built: their
// allocations are honest (what the file asks for), not bugs.
bool small_enough(const ModelConfig& cfg, const WeightSet& w);

// Encodes a few strings (and `text`), decodes the ids, streams them, decodes some arbitrary ids
// (out of range ones must throw ferrum::Error) and renders the chat template if there is one.
void exercise_tokenizer(const Tokenizer& tok, std::string_view text);

// create_model + a two-token prefill and one decode step, when small_enough().
void exercise_decoder(ModelConfig cfg, WeightSet w);

}  // namespace ferrum::fuzz
