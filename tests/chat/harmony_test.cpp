// The harmony answer rewritten into <think> reasoning, text and Hermes-style calls (chat/harmony.h),
// whole and streamed: every way of cutting the answer into pieces releases the same text, and
// what was released never changes.
#include "chat/harmony.h"

#include <gtest/gtest.h>

#include "chat/reasoning.h"
#include "chat/tool_parser.h"

namespace ferrum::chat {
namespace {

const std::string kCall =
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    "{\"city\": \"Paris\"}<|call|>";

TEST(Harmony, AnalysisThenFinal) {
  EXPECT_EQ(harmony_to_text("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
                            "<|message|>Answer.<|return|>"),
            "<think>Think.</think>Answer.");
}

TEST(Harmony, CallsInEitherHeaderOrderBecomeHermesBlocks) {
  EXPECT_EQ(harmony_to_text(kCall),
            "<think>Need the weather.</think><tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":"
            "\"Paris\"}}\n</tool_call>\n");
  // The recipient before the channel, as gpt-oss's template writes past calls.
  const std::string t = harmony_to_text(
      "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{\"a\": 1}<|call|>");
  const ParsedAnswer p = parse_tool_answer(ToolStyle::Hermes, t);
  ASSERT_EQ(p.calls.size(), 1u) << t;
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(p.calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(p.content, "");
}

TEST(Harmony, PlainTextPreamblesBuiltinToolsAndLateReasoning) {
  EXPECT_EQ(harmony_to_text("Just text, no format."), "Just text, no format.");
  EXPECT_EQ(harmony_to_text("assistant is a word"), "assistant is a word");  // never became a header
  // A commentary preamble is text; a call to a built-in tool (not run by ferrum) is left out, and so
  // is analysis written after the answer began.
  EXPECT_EQ(harmony_to_text("<|channel|>commentary<|message|>Let me look.<|end|>"
                            "<|start|>assistant to=browser.search<|channel|>commentary<|message|>{}<|call|>"
                            "<|start|>assistant<|channel|>analysis<|message|>late<|end|>"),
            "Let me look.");
  // Two analysis messages share one block.
  EXPECT_EQ(harmony_to_text("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis"
                            "<|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c"),
            "<think>a\nb</think>c");
  // Cut inside the reasoning: the block is closed.
  EXPECT_EQ(harmony_to_text("<|channel|>analysis<|message|>cut here"), "<think>cut here</think>");
}

// Every split of the answer into two pieces, and one character at a time: the same text in the
// end, and each release a prefix of it.
TEST(Harmony, StreamedAsWhole) {
  const std::string answer =
      "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary"
      "<|message|>Checking <sunny> skies.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
  const std::string whole = harmony_to_text(answer);
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    HarmonyStream s;
    std::string out = s.push(answer.substr(0, cut));
    EXPECT_EQ(whole.substr(0, out.size()), out) << cut;
    out += s.push(answer.substr(cut));
    out += s.finish();
    EXPECT_EQ(out, whole) << cut;
  }
  HarmonyStream s;
  std::string out;
  for (char c : answer) {
    out += s.push(std::string(1, c));
    ASSERT_EQ(whole.substr(0, out.size()), out);
  }
  EXPECT_EQ(out + s.finish(), whole);
  // And the server's split of the rewritten text.
  const ReasoningSplit r = split_reasoning(whole, ReasoningMarkers{}, false, false);
  EXPECT_EQ(r.reasoning, "Need the weather.");
  const ParsedAnswer p = parse_tool_answer(ToolStyle::Hermes, r.content);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(p.content, "Checking <sunny> skies.");
}

TEST(Harmony, GptOssTemplateIsTheHarmonyStyle) {
  EXPECT_EQ(detect_tool_style("{{- \"<|start|>assistant<|channel|>final<|message|>\" + m.content }}"),
            ToolStyle::Harmony);
  EXPECT_STREQ(tool_style_name(ToolStyle::Harmony), "harmony");
}

}  // namespace
}  // namespace ferrum::chat
