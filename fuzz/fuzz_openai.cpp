// OpenAI request bodies: the JSON body parser (with its nesting limit), the validation of chat
// and completions fields, chat prompt rendering through a model's own template (Qwen3's, from a
// GGUF fixture) and the plain fallback, the literal marking of control tokens, and tokenization.
// The first input byte picks the endpoint and options; the rest is the body. Every failure must
// be a ferrum::Error (an HTTP 4xx); anything else escaping is a finding.
#include <cstdint>
#include <memory>
#include <string_view>

#include "chat/chat_prompt.h"
#include "ferrum/error.h"
#include "ferrum/tokenizer.h"
#include "formats/gguf.h"
#include "server/json_body.h"
#include "server/openai_request.h"

using namespace ferrum;

namespace {

struct Fixture {  // a tokenizer and its chat prompt
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<chat::ChatPrompt> prompt;
  explicit Fixture(const std::string& gguf) {
    auto f = gguf::File::open(gguf);
    tok = Tokenizer::from_gguf(*f);
    prompt = std::make_unique<chat::ChatPrompt>(*tok);
  }
};

Fixture& qwen() {
  static Fixture m(FERRUM_SOURCE_DIR "/tests/data/models/qwen3/gguf/qwen3-Q4_0.gguf");
  return m;
}
Fixture& stories() {
  static Fixture m(FERRUM_SOURCE_DIR "/models/stories260K.gguf");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  qwen();
  stories();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::vector<std::string> names = {"m", "ferrum"};
  Fixture& m = (mode & 2) ? stories() : qwen();
  try {
    const nlohmann::json b = server::parse_json_body(body);
    if (mode & 1)
      (void)server::parse_completion_request(b, *m.tok, names);
    else
      (void)server::parse_chat_request(b, *m.tok, *m.prompt, names,
                                       {/*special_tokens_in_messages=*/(mode & 4) != 0, (mode & 8) != 0});
  } catch (const Error&) {
  }
  return 0;
}
