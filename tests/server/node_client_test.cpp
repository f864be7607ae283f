// The official OpenAI Node.js client (tests/server-node) against the in-process server.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/embeddings.h"
#include "server_fixture.h"
#include "test_util.h"

namespace ferrum {
namespace {

namespace fs = std::filesystem;

int sh(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const fs::path kDir = fs::path(FERRUM_SOURCE_DIR) / "tests" / "server-node";

void ensure_node() {
  if (std::getenv("FERRUM_SKIP_NODE_TESTS")) GTEST_SKIP() << "FERRUM_SKIP_NODE_TESTS is set";
  std::string out;
  ASSERT_EQ(sh("node --version", &out), 0) << "Node.js is needed for the OpenAI client test: " << out;
  // A marker written after `npm ci` has finished: a package's own files appear while npm is still
  // extracting the rest, so a test that saw them could start node on a half-installed package.
  // flock: CTest runs several client tests at once; one installs, the others wait for it.
  if (!fs::exists(kDir / "node_modules" / ".ferrum-npm-ok")) {
    out.clear();
    ASSERT_EQ(sh("cd '" + kDir.string() +
                     "' && flock .npm-install.lock sh -c '[ -f node_modules/.ferrum-npm-ok ] || "
                     "{ timeout 300 npm ci --no-audit --no-fund && touch node_modules/.ferrum-npm-ok; }'",
                 &out),
              0)
        << "npm ci failed (set FERRUM_SKIP_NODE_TESTS=1 to skip on an offline machine):\n"
        << out;
  }
}

void run_client(const std::string& model_path, const std::string& api_key) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  so.api_key = api_key;
  test::TestServer ts(model_path, so);
  std::string out;
  const int rc = sh("timeout 300 node '" + (kDir / "openai_client_test.mjs").string() + "' " + ts.url() +
                        " test-model " + (api_key.empty() ? "none" : api_key),
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

// The two-turn tool loop (openai_tools_test.mjs) with a chat template of each tool style served in
// place of stories260K's (none: the default format).
void run_tools_client(const std::string& template_file) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  if (!template_file.empty()) {
    std::ifstream f(test::data_path("chat/templates/" + template_file), std::ios::binary);
    so.chat_template.assign(std::istreambuf_iterator<char>(f), {});
  }
  test::TestServer ts(test::stories_gguf(), so, {}, 2048);
  std::string out;
  const int rc =
      sh("timeout 300 node '" + (kDir / "openai_tools_test.mjs").string() + "' " + ts.url() + " test-model",
         &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

TEST(NodeOpenAIClient, ToolLoopHermesTemplate) {
  run_tools_client("Qwen-Qwen2.5-7B-Instruct.jinja");
}
TEST(NodeOpenAIClient, ToolLoopLlama3Template) {
  run_tools_client("meta-llama-Llama-3.2-3B-Instruct.jinja");
}
TEST(NodeOpenAIClient, ToolLoopMistralTemplate) {
  run_tools_client("mistralai-Mistral-Nemo-Instruct-2407.jinja");
}
TEST(NodeOpenAIClient, ToolLoopPhi4MiniTemplate) {
  run_tools_client("microsoft-Phi-4-mini-instruct.jinja");
}
TEST(NodeOpenAIClient, ToolLoopDefaultFormat) {
  run_tools_client("");
}

// A harmony conversation (gpt-oss's template) through the official OpenAI client
// (tests/server-node/openai_harmony_test.mjs): reasoning_content, tool_calls and content, streamed
// and not, over two turns.
TEST(NodeOpenAIClient, HarmonyConversation) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  std::ifstream f(test::data_path("chat/templates/openai-gpt-oss-120b.jinja"), std::ios::binary);
  so.chat_template.assign(std::istreambuf_iterator<char>(f), {});
  test::TestServer ts(test::stories_gguf(), so, {}, 512);
  std::string out;
  const int rc =
      sh("timeout 300 node '" + (kDir / "openai_harmony_test.mjs").string() + "' " + ts.url() + " test-model",
         &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

// The Responses API and reasoning_content through the official OpenAI client
// (tests/server-node/openai_responses_test.mjs), stories260K serving Qwen3's (thinking) template.
TEST(NodeOpenAIClient, ResponsesApiAndReasoning) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  std::ifstream f(test::data_path("chat/templates/Qwen-Qwen3-0.6B.jinja"), std::ios::binary);
  so.chat_template.assign(std::istreambuf_iterator<char>(f), {});
  test::TestServer ts(test::stories_gguf(), so, {}, 2048);
  std::string out;
  const int rc = sh(
      "timeout 300 node '" + (kDir / "openai_responses_test.mjs").string() + "' " + ts.url() + " test-model",
      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

// The chat page in headless Chromium (tests/server-node/webui_test.mjs); skipped without a Chromium
// (scripts/setup.sh's test packages install Debian's). The screenshot is left in the build tree.
TEST(WebUi, ChatStopReloadInHeadlessChromium) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  std::string chromium;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(p)) chromium = p;
  if (const char* e = std::getenv("FERRUM_CHROMIUM")) chromium = e;
  if (chromium.empty())
    GTEST_SKIP() << "no Chromium found (apt-get install chromium, or set FERRUM_CHROMIUM)";
  test::TestServer ts(test::stories_gguf(), {}, {}, 32768);
  const std::string shot = (fs::current_path() / "webui-screenshot.png").string();
  std::string out;
  const int rc = sh("timeout 300 node '" + (kDir / "webui_test.mjs").string() + "' " + ts.url() + " '" +
                        chromium + "' '" + shot + "'",
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

// The official Anthropic SDK against /v1/messages (tests/server-node/anthropic_client_test.mjs), with
// the key sent as x-api-key.
TEST(NodeAnthropicClient, MessagesStreamToolUseAndCountTokens) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  so.api_key = "test-key-456";
  test::TestServer ts(test::stories_gguf(), so, {}, 2048);
  std::string out;
  const int rc = sh("timeout 300 node '" + (kDir / "anthropic_client_test.mjs").string() + "' " + ts.url() +
                        " test-model test-key-456",
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

// The official Ollama client against /api/* (tests/server-node/ollama_client_test.mjs).
TEST(NodeOllamaClient, ChatGenerateListAndEmbed) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  // As `ferrum serve` sets it up: the engine, and /api/embed over the same model.
  ModelOptions mo;
  mo.n_threads = 2;
  LoadedModel lm = load_model(test::stories_gguf(), mo);
  EngineOptions eo;
  eo.kv.layout = KvLayout::Paged;
  eo.kv.capacity = 256;
  Engine engine(*lm.model, *lm.tokenizer, eo);
  server::Embedder emb(engine, EmbedOptions{});
  server::ServerOptions so;
  so.port = 0;
  so.model_name = "test-model";
  server::Server srv(&engine, &emb, so);
  const int port = srv.start();
  std::string out;
  const int rc = sh("timeout 300 node '" + (kDir / "ollama_client_test.mjs").string() +
                        "' http://127.0.0.1:" + std::to_string(port) + " test-model",
                    &out);
  engine.shutdown(true);
  srv.stop();
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

TEST(NodeOpenAIClient, StoriesBundledModel) {
  run_client(test::stories_gguf(), "");
}
TEST(NodeOpenAIClient, Qwen3FixtureWithApiKey) {
  run_client(test::data_path("models/qwen3/gguf/qwen3-Q8_0.gguf"), "test-key-123");
}

// Two LoRA adapters driven at once through the client (tests/server-node/openai_lora_test.mjs).
TEST(NodeOpenAIClient, TwoLoraAdaptersConcurrently) {
  ensure_node();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  server::ServerOptions so;
  so.lora_modules = {"a=" + test::data_path("lora/llama-a"), "b=" + test::data_path("lora/llama-b")};
  test::TestServer ts(test::data_path("models/llama/gguf/llama-Q8_0.gguf"), so);
  std::string out;
  const int rc =
      sh("timeout 300 node '" + (kDir / "openai_lora_test.mjs").string() + "' " + ts.url() + " test-model",
         &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
}

}  // namespace
}  // namespace ferrum
