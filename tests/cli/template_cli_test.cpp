// `ferrum template` previews what the server sends: for a model without a chat template it
// renders the same fallback `ferrum serve` uses (and says so), instead of refusing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/chat_prompt.h"
#include "loading/loader.h"
#include "test_util.h"

namespace ferrum::test {
namespace {

TEST(TemplateCli, ModelWithoutTemplateShowsTheServersFallback) {
  const std::string model = std::string(FERRUM_SOURCE_DIR) + "/models/stories260K.gguf";
  const nlohmann::json messages = {{{"role", "system"}, {"content", "Be brief."}},
                                   {{"role", "user"}, {"content", "Tell me a story."}}};
  const std::string dir = temp_dir();
  std::ofstream(dir + "/m.json") << messages.dump();
  const RunResult r =
      run_ferrum("template '" + model + "' --messages '" + dir + "/m.json' --add-generation-prompt");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("has no chat template; this is the plain fallback that `ferrum serve` uses"),
            std::string::npos)
      << r.err;
  const auto tok = load_tokenizer(model, "");
  const chat::ChatPrompt server_prompt(*tok);
  EXPECT_EQ(server_prompt.kind(), "plain");
  EXPECT_EQ(r.out, server_prompt.render(messages, nullptr, nullptr).text);
}

}  // namespace
}  // namespace ferrum::test
