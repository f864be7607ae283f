// Jinja chat templates: the input is split (at fuzz_util.h's separator line) into a template and
// a JSON list of messages (a fixed conversation when it does not parse or is missing). The
// template is parsed and rendered as apply_chat_template does, with tools and extra variables.
#include <cstdint>

#include "ferrum/error.h"
#include "fuzz_util.h"
#include "template/chat_template.h"

using namespace ferrum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 2);
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},)"
      R"({"role":"assistant","content":"Hello","tool_calls":[{"type":"function","function":)"
      R"({"name":"f","arguments":{"a":1}}}]},{"role":"tool","content":"42"},{"role":"user","content":"Bye"}])");
  if (parts.size() > 1) {
    auto j = nlohmann::ordered_json::parse(parts[1], nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) messages = std::move(j);
  }
  try {
    ChatTemplate ct{std::string(parts[0])};
    ChatTemplateOptions opt;
    opt.bos_token = "<s>";
    opt.eos_token = "</s>";
    opt.tools = nlohmann::ordered_json::parse(
        R"([{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object",)"
        R"("properties":{"a":{"type":"integer"}}}}}])");
    opt.extra["enable_thinking"] = true;
    opt.strftime_now = [](const std::string& fmt) { return strftime_at(std::tm{}, fmt); };
    for (bool gen : {false, true}) {
      opt.add_generation_prompt = gen;
      (void)ct.render(messages, opt);
    }
  } catch (const Error&) {
  }
  return 0;
}
