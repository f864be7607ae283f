// Reasoning kept apart from the answer (chat/reasoning.h): whole answers split, prompts classified,
// and streamed splits that always add up to the whole answer's split.
#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <random>

namespace ferrum::chat {
namespace {

const ReasoningMarkers kM;

TEST(Reasoning, SplitsWholeAnswers) {
  struct Case {
    const char* text;
    bool open;
    const char* reasoning;
    const char* content;
  } cases[] = {
      {"<think>\nplan it\n</think>\n\nThe answer.", false, "plan it", "The answer."},
      {"  <think>a</think>b", false, "a", "b"},
      {"no thinking here", false, "", "no thinking here"},
      {" x <think>a</think>", false, "", " x <think>a</think>"},  // not at the start: content
      {"plan\n</think>\n\nanswer", true, "plan", "answer"},       // the prompt opened it
      {"still thinking when cut", true, "still thinking when cut", ""},
      {"<think>cut short", false, "cut short", ""},
      {"</think>answer", true, "", "answer"},
      {"", false, "", ""},
      {"  \n", false, "", "  \n"},
      {"<thi", false, "", "<thi"},  // an unfinished marker at the end is text
      {"a</think>b</think>c", true, "a", "b</think>c"},
  };
  for (const Case& c : cases) {
    const ReasoningSplit s = split_reasoning(c.text, kM, c.open, /*partial=*/false);
    EXPECT_EQ(s.reasoning, c.reasoning) << c.text;
    EXPECT_EQ(s.content, c.content) << c.text;
  }
}

TEST(Reasoning, PartialSplitsHoldWhatMayChange) {
  EXPECT_EQ(split_reasoning(" <th", kM, false, true).content, "");
  EXPECT_EQ(split_reasoning("<think>abc </thi", kM, false, true).reasoning, "abc");
  EXPECT_EQ(split_reasoning("abc\n", kM, true, true).reasoning, "abc");
  EXPECT_EQ(split_reasoning("Hello", kM, false, true).content, "Hello");
}

TEST(Reasoning, PromptsAreOpenClosedOrUndecided) {
  EXPECT_EQ(prompt_reasoning("<|im_start|>assistant\n", kM), PromptReasoning::None);
  EXPECT_EQ(prompt_reasoning("<|im_start|>assistant\n<think>\n", kM), PromptReasoning::Open);
  EXPECT_EQ(prompt_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", kM), PromptReasoning::Closed);
  // An earlier turn's reasoning, then a new generation prompt: the model decides.
  EXPECT_EQ(prompt_reasoning("<think>a</think>b<|im_end|>\n<|im_start|>assistant\n", kM),
            PromptReasoning::None);
}

// Every way of cutting an answer into stream pieces adds up to its whole split.
TEST(Reasoning, StreamedPiecesAddUpToTheWholeSplit) {
  const char* texts[] = {"<think>\nstep one\n\nstep two </think>\n\nfinal <b>answer</b>\n",
                         "  plain answer with </think> in it", "reasoning only, cut short <",
                         "<think></think>x", "</think>\n\nafter an empty one"};
  std::mt19937 rng(7);
  for (const char* text : texts)
    for (bool open : {false, true})
      for (int trial = 0; trial < 50; ++trial) {
        const std::string t = text;
        ReasoningStream s(kM, open);
        std::string reasoning, content;
        for (size_t i = 0; i < t.size();) {
          const size_t n = std::min(t.size() - i, size_t{1} + rng() % 5);
          const ReasoningSplit d = s.push(std::string_view(t).substr(i, n));
          reasoning += d.reasoning;
          content += d.content;
          i += n;
        }
        const ReasoningSplit d = s.finish();
        reasoning += d.reasoning;
        content += d.content;
        const ReasoningSplit whole = split_reasoning(t, kM, open, false);
        ASSERT_EQ(reasoning, whole.reasoning) << t << " open=" << open;
        ASSERT_EQ(content, whole.content) << t << " open=" << open;
      }
}

}  // namespace
}  // namespace ferrum::chat
