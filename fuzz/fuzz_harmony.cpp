// A model's answer in gpt-oss's harmony format (chat/harmony.h), as any bytes: the first byte picks a
// cut, the rest is the answer. HarmonyStream must release, over the two pieces and one byte at a
// time, exactly what it releases for the whole answer, each release a prefix of the end result;
// the rewritten text then goes through the server's splits (reasoning, Hermes calls) whole and
// streamed. A mismatch aborts; nothing may throw.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "chat/harmony.h"
#include "chat/reasoning.h"
#include "chat/tool_parser.h"
#include "chat/tool_stream.h"

using namespace ferrum::chat;

namespace {

void expect_prefix(const std::string& whole, const std::string& part) {
  if (whole.compare(0, part.size(), part) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  const std::string answer(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string whole = harmony_to_text(answer);
  const size_t cut = data[0] % (answer.size() + 1);
  HarmonyStream two;
  std::string out = two.push(answer.substr(0, cut));
  expect_prefix(whole, out);
  out += two.push(answer.substr(cut));
  expect_prefix(whole, out);
  if (out + two.finish() != whole) std::abort();
  HarmonyStream bytes;
  out.clear();
  for (char c : answer) {
    out += bytes.push(std::string_view(&c, 1));
    expect_prefix(whole, out);
  }
  if (out + bytes.finish() != whole) std::abort();
  // What the server does with it.
  const ReasoningSplit r = split_reasoning(whole, ReasoningMarkers{}, false, false);
  (void)parse_tool_answer(ToolStyle::Hermes, r.content, cut % 2 == 0);
  std::optional<ReasoningStream> rs(std::in_place, ReasoningMarkers{}, false);
  ToolStreamSplitter split(ToolStyle::Hermes, false);
  for (size_t i = 0; i < whole.size(); i += 7) {
    const ReasoningSplit d = stream_piece(rs, std::string_view(whole).substr(i, 7), i + 7 >= whole.size());
    (void)split.push(d.content);
  }
  return 0;
}
