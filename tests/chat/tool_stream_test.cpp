// Streaming with tools: for answers of every style, fed in pieces of every size, the content
// released so far is always a prefix of the content the parser finds in the whole answer, and text
// before a call is released before the answer ends.
#include "chat/tool_stream.h"

#include <gtest/gtest.h>

#include "chat/tool_parser.h"

namespace ferrum::chat {
namespace {

struct Case {
  ToolStyle style;
  std::string answer;
  std::string released;  // released once all of the answer has come, before its end is known
};

TEST(ToolStream, ReleasedTextIsAPrefixOfTheParsedContent) {
  const std::string hermes_call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
  const std::vector<Case> cases = {
      {ToolStyle::Hermes, "Let me look.\n" + hermes_call, "Let me look."},
      {ToolStyle::Hermes, "Plain answer with a < sign and <tool text.",
       "Plain answer with a < sign and <tool text."},
      {ToolStyle::Hermes, "Broken: <tool_call>{nope}</tool_call> end", "Broken:"},
      {ToolStyle::Default, "  " + hermes_call + "\n" + hermes_call, ""},
      {ToolStyle::Llama3, " {\"name\": \"f\", \"parameters\": {}}", ""},
      {ToolStyle::Llama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", ""},
      {ToolStyle::Llama3, "The answer is 4. {not a call}", "The answer is 4. {not a call}"},
      {ToolStyle::Llama3, "{\"json\": \"but no call\"}", ""},
      {ToolStyle::Mistral, "Checking [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]", "Checking"},
      {ToolStyle::Mistral, "[{\"name\": \"f\", \"arguments\": {}}]", ""},
      {ToolStyle::Mistral, "[1] is a footnote", ""},
      {ToolStyle::Mistral, "No calls here.", "No calls here."},
      {ToolStyle::Phi4, "Checking <|tool_call|>[{\"name\": \"f\", \"arguments\": {}}]<|/tool_call|>",
       "Checking"},
      {ToolStyle::Phi4, "[{\"name\": \"f\", \"arguments\": {}}]", ""},
      {ToolStyle::Phi4, "A <|tool text that is not a call", "A <|tool text that is not a call"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(tool_style_name(c.style)) + ": " + c.answer);
    const std::string content = parse_tool_answer(c.style, c.answer).content;
    for (size_t piece = 1; piece <= c.answer.size(); ++piece) {
      ToolStreamSplitter s(c.style, /*forced=*/false);
      std::string released;
      for (size_t at = 0; at < c.answer.size(); at += piece) {
        released += s.push(std::string_view(c.answer).substr(at, piece));
        ASSERT_TRUE(content.starts_with(released)) << "piece " << piece << ": released '" << released << "'";
        ASSERT_EQ(released.size(), s.released());
      }
      EXPECT_EQ(released, c.released) << "piece " << piece;
    }
  }
}

TEST(ToolStream, ForcedCallsReleaseNothing) {
  ToolStreamSplitter s(ToolStyle::Hermes, /*forced=*/true);
  EXPECT_EQ(s.push("text that is not a call"), "");
  EXPECT_EQ(s.released(), 0u);
  EXPECT_EQ(s.text(), "text that is not a call");
}

}  // namespace
}  // namespace ferrum::chat
