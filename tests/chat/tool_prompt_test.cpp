// Tool conversations rendered through real chat templates, compared with Python Jinja2's renders
// (tests/data/chat/gen_tool_renders.py): tools in the template's `tools`, earlier calls with their
// arguments as objects, `tool` results, and the default format for a template without tools.
#include "chat/tool_prompt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_prompt.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace ferrum::tool_prompt_test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A tokenizer fixture (`base`) with the chat template `tpl` in place of its own.
std::unique_ptr<Tokenizer> with_template(const std::string& base, const std::string& tpl) {
  const fs::path src = test::hf_dir(base);
  const fs::path dir = fs::path(test::temp_dir()) / base;
  fs::create_directories(dir);
  fs::copy_file(src / "tokenizer.json", dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  json cfg = json::parse(read(src / "tokenizer_config.json"));
  cfg.erase("chat_template");
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  std::ofstream(dir / "chat_template.jinja") << tpl;
  auto tok = Tokenizer::from_hf_dir(dir.string());
  fs::remove_all(dir);
  return tok;
}

std::string base_tokenizer(const std::string& style) {
  if (style == "hermes") return "qwen3";
  if (style == "mistral") return "mistral-7b-v0.1";
  return "llama3";
}

TEST(ToolPrompt, RendersAsJinja2DoesWithEachTemplate) {
  const json cases = json::parse(read(test::data_path("chat/tool_renders.json")));
  ASSERT_GE(cases.size(), 11u);
  for (const json& c : cases) {
    SCOPED_TRACE(c["template"].get<std::string>());
    const std::string tpl = read(test::data_path("chat/templates/" + c["template"].get<std::string>()));
    auto tok = with_template(base_tokenizer(c["style"]), tpl);
    chat::ChatPrompt prompt(*tok);
    EXPECT_EQ(chat::tool_style_name(prompt.tool_style()), c["style"].get<std::string>());
    chat::ToolRequest req = chat::parse_tool_request({{"tools", c["tools"]}, {"tool_choice", "auto"}});
    EXPECT_EQ(prompt.system_role(), c["system_role"].get<bool>());
    const chat::ToolPrompt tp =
        chat::tool_prompt(prompt.tool_style(), c["messages"], req, prompt.system_role());
    json kwargs = c["extra"];
    kwargs["bos_token"] = c["bos"];
    kwargs["eos_token"] = c["eos"];
    EXPECT_EQ(prompt.render(tp.messages, tp.tools, kwargs).text, c["expected"].get<std::string>());
  }
}

TEST(ToolPrompt, DefaultFormatGoesFirstWithoutASystemMessage) {
  const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  const chat::ToolRequest req = chat::parse_tool_request({{"tools", tools}});
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
  const chat::ToolPrompt tp = chat::tool_prompt(chat::ToolStyle::Default, msgs, req);
  ASSERT_EQ(tp.messages.size(), 2u);
  EXPECT_EQ(tp.messages[0]["role"], "system");
  EXPECT_EQ(tp.messages[0]["content"], chat::default_tools_text(tools));
  EXPECT_TRUE(tp.tools.is_null());
  // tool_choice none: the template sees no tools at all.
  const chat::ToolPrompt none = chat::tool_prompt(
      chat::ToolStyle::Hermes, msgs, chat::parse_tool_request({{"tools", tools}, {"tool_choice", "none"}}));
  EXPECT_TRUE(none.tools.is_null());
  EXPECT_EQ(none.messages, msgs);
}

std::string param_of(const json& messages) {
  try {
    chat::tool_prompt(chat::ToolStyle::Hermes, messages, {});
  } catch (const chat::ChatError& e) {
    return e.param;
  }
  return "";
}

TEST(ToolPrompt, MalformedToolCallsNameTheField) {
  auto assistant = [](json calls) {
    return json::array(
        {{{"role", "user"}, {"content", "q"}}, {{"role", "assistant"}, {"tool_calls", calls}}});
  };
  EXPECT_EQ(param_of(assistant("x")), "messages[1].tool_calls");
  EXPECT_EQ(param_of(assistant(json::array({1}))), "messages[1].tool_calls[0]");
  EXPECT_EQ(param_of(assistant(json::array({{{"function", {{"name", 3}}}}}))),
            "messages[1].tool_calls[0].function.name");
  EXPECT_EQ(param_of(assistant(json::array({{{"function", {{"name", "f"}, {"arguments", "{not json"}}}}}))),
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(param_of(assistant(json::array({{{"function", {{"name", "f"}, {"arguments", "[1]"}}}}}))),
            "messages[1].tool_calls[0].function.arguments");
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(param_of(assistant(
                json::array({{{"function", {{"name", "f"}, {"arguments", "{\"a\":" + deep + "}"}}}}}))),
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(param_of(json::array({{{"role", "tool"}, {"tool_call_id", 5}, {"content", "r"}}})),
            "messages[0].tool_call_id");
  EXPECT_EQ(param_of(assistant(nullptr)), "");  // null tool_calls: a plain message
}

}  // namespace
}  // namespace ferrum::tool_prompt_test
