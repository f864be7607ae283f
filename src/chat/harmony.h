// gpt-oss's harmony format on the output side. The model answers in messages:
//
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//
// (the recipient may also stand before the channel: "<|start|>assistant to=functions.NAME<|channel|>
// commentary json<|message|>..."). HarmonyStream rewrites that text, as it is generated, into the
// form the server already splits for every other model (reasoning.h, tool_parser.h in the Hermes
// style): the analysis channel between <think> and </think>, the final channel and commentary
// without a recipient (preambles) as plain text, each call to a function as
//   <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>
// Calls to the built-in tools (browser.*, python), which ferrum does not run, and reasoning written
// after the answer began are left out. An answer with no harmony markers at all is plain text.
// The markers are special tokens: the request decodes them (RequestParams::keep_special).
#pragma once

#include <string>
#include <string_view>

namespace ferrum::chat {

class HarmonyStream {
 public:
  // Adds generated text; returns the rewritten text that can be released now (it never changes
  // afterwards: a marker's possible beginning at the end is held).
  std::string push(std::string_view text);
  // The rest, once the output is complete (an unterminated message ends with the output).
  std::string finish();

 private:
  enum class Kind { Reasoning, Content, Call, Dropped };
  std::string drain(bool final);
  void start_message(const std::string& header, std::string& out);
  void body(std::string_view text, std::string& out);
  void end_message(std::string& out);

  std::string buf_;  // text not yet consumed
  bool in_body_ = false;
  bool first_ = true;  // before the first message's header
  Kind kind_ = Kind::Content;
  std::string call_name_, call_args_;
  bool think_open_ = false, answered_ = false;
};

// The whole answer at once (HarmonyStream's push then finish).
std::string harmony_to_text(std::string_view answer);

}  // namespace ferrum::chat
