// Reasoning ("thinking") kept apart from the answer. Templates of thinking models (Qwen3,
// DeepSeek-R1, SmolLM3, QwQ) have the model write its reasoning between <think> and </think>
// before the answer; some end the prompt inside that block already (the model then writes only
// the reasoning's end). The server returns the reasoning as `reasoning_content` and the rest as
// `content`, as vLLM's and llama.cpp's servers do: the reasoning trimmed of surrounding
// whitespace, the answer of leading whitespace. An answer that does not open with the start
// marker (and a prompt that did not open it) has no reasoning: all of it is content, verbatim.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ferrum/tokenizer.h"

namespace ferrum::chat {

struct ReasoningMarkers {
  std::string start = "<think>", end = "</think>";
};

// The markers of a template that thinks (its source writes <think> or </think>, or the vocabulary
// has both as tokens); nullopt for one that does not.
std::optional<ReasoningMarkers> template_reasoning(std::string_view template_source, const Tokenizer& tok);

// Where a rendered prompt leaves the reasoning: Open (it ends inside a started block: the answer
// begins with reasoning), Closed (the template wrote a whole, possibly empty, block after the
// last turn began: the model is not to think) or None (the model decides).
enum class PromptReasoning { None, Open, Closed };
PromptReasoning prompt_reasoning(std::string_view prompt, const ReasoningMarkers& m);

struct ReasoningSplit {
  std::string reasoning, content;
};

// Splits an answer. `open`: it starts inside the reasoning. `partial`: more text may follow, so
// whatever could still change is left out (an undecided start, a possible end marker's prefix, the
// reasoning's trailing whitespace): the partial split of a text is always a prefix, part by part,
// of the split of any continuation of it.
ReasoningSplit split_reasoning(std::string_view text, const ReasoningMarkers& m, bool open, bool partial);

// A streamed answer split as it comes: each push returns the reasoning and content not yet sent.
class ReasoningStream {
 public:
  ReasoningStream(ReasoningMarkers m, bool open) : m_(std::move(m)), open_(open) {}
  ReasoningSplit push(std::string_view piece);
  ReasoningSplit finish();  // the rest, once the answer is complete
  const std::string& text() const { return text_; }

 private:
  ReasoningSplit delta(const ReasoningSplit& now);
  ReasoningMarkers m_;
  bool open_;
  std::string text_;
  size_t sent_reasoning_ = 0, sent_content_ = 0;
};

// One piece of a streamed answer through `r` (none: nothing kept apart, all of it content);
// `last`: the answer ends with it, so what was held comes out too.
ReasoningSplit stream_piece(std::optional<ReasoningStream>& r, std::string_view piece, bool last);

}  // namespace ferrum::chat
