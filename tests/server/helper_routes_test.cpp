// llama-server's helper routes (/tokenize, /detokenize, /apply-template, /props) and the request
// log (one line per request, text or JSON, with status and token counts).
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "server_fixture.h"

namespace ferrum::test {
namespace {

using json = nlohmann::json;

TEST(HelperRoutes, TokenizeDetokenizeRoundTrip) {
  TestServer ts(stories_gguf());
  auto c = ts.client();
  const Tokenizer& tok = *ts.lm.tokenizer;
  const std::string text = "Once upon a time, there was a cat.";
  int status = 0;
  json r = post_json(c, "/tokenize", {{"content", text}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["tokens"].get<std::vector<int32_t>>(), tok.encode(text, false, true));
  r = post_json(c, "/tokenize", {{"content", text}, {"add_special", true}}, &status);
  EXPECT_EQ(r["tokens"].get<std::vector<int32_t>>(), tok.encode(text, true, true));
  ASSERT_EQ(r["tokens"][0], tok.bos_id());
  r = post_json(c, "/tokenize", {{"content", text}, {"with_pieces", true}}, &status);
  std::string joined;
  for (const json& t : r["tokens"]) {
    EXPECT_EQ(t["piece"], tok.token_to_piece(t["id"]));
    joined += t["piece"].get<std::string>();
  }
  EXPECT_EQ(joined, " " + text);  // SentencePiece's word-start space on the first piece
  // Strings and ids mixed, as llama-server takes them.
  r = post_json(c, "/tokenize", {{"content", json::array({"Once", 42, " upon"})}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["tokens"][1], 42);

  const std::vector<int32_t> ids = tok.encode(text, false, true);
  r = post_json(c, "/detokenize", {{"tokens", ids}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["content"], tok.decode(ids));

  r = post_json(c, "/tokenize", {{"content", 5}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "content");
  r = post_json(c, "/detokenize", {{"tokens", {1, 999999}}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("999999"), std::string::npos);
}

TEST(HelperRoutes, ApplyTemplateAndProps) {
  server::ServerOptions so;
  so.chat_template =
      "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}";
  so.model_path = "/models/stories260K.gguf";
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  int status = 0;
  const json msgs =
      json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
  json r = post_json(c, "/apply-template", {{"messages", msgs}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["prompt"], "[system] Be brief.\n[user] Hi\n[assistant]");
  r = post_json(c, "/apply-template", {{"messages", "Hi"}}, &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["error"]["param"], "messages");

  auto g = c.Get("/props");
  ASSERT_TRUE(g);
  ASSERT_EQ(g->status, 200);
  const json p = json::parse(g->body);
  EXPECT_EQ(p["model_alias"], "test-model");
  EXPECT_EQ(p["model_path"], "/models/stories260K.gguf");
  EXPECT_EQ(p["default_generation_settings"]["n_ctx"], ts.engine->kv_capacity());
  EXPECT_EQ(p["total_slots"], ts.engine->options().max_num_seqs);
  EXPECT_EQ(p["chat_template"], so.chat_template);
  EXPECT_EQ(p["bos_token"], ts.lm.tokenizer->bos_text());
  auto bad = c.Post("/props", "{}", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 405);
}

TEST(HelperRoutes, NeedTheApiKey) {
  server::ServerOptions so;
  so.api_key = "sekret";
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  int status = 0;
  post_json(c, "/tokenize", {{"content", "hi"}}, &status);
  EXPECT_EQ(status, 401);
  EXPECT_EQ(c.Get("/props")->status, 401);
  httplib::Headers h = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(c.Get("/props", h)->status, 200);
}

TEST(WebPage, ServedAtTheRootWithoutTheKeyAndOffWithNoWebui) {
  server::ServerOptions so;
  so.api_key = "sekret";
  TestServer ts(stories_gguf(), so);
  auto c = ts.client();
  auto r = c.Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->body.find("<title>ferrum</title>"), std::string::npos);
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  for (const char* asset : {"/webui/app.js", "/webui/markdown.js", "/webui/style.css", "/index.html"}) {
    auto a = c.Get(asset);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200) << asset;
    EXPECT_GT(a->body.size(), 500u) << asset;
  }
  EXPECT_EQ(c.Get("/webui/app.js")->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(c.Get("/v1/models")->status, 401);  // the API itself still needs the key
  EXPECT_EQ(c.Post("/", "{}", "application/json")->status, 405);

  so.webui = false;
  TestServer off(stories_gguf(), so);
  auto c2 = off.client();
  EXPECT_EQ(c2.Get("/", httplib::Headers{{"Authorization", "Bearer sekret"}})->status, 404);
}

// Collects the log's lines; waits for n of them (the line is written once the answer is sent).
struct LogLines {
  std::mutex mu;
  std::vector<std::string> lines;
  std::vector<std::string> wait(size_t n) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lk(mu);
        if (lines.size() >= n) return lines;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard lk(mu);
    return lines;
  }
};

// Server options whose log goes to `log`.
server::ServerOptions logged_to(std::shared_ptr<LogLines> log, server::RequestLogFormat format) {
  server::ServerOptions so;
  so.request_log = format;
  so.log_line = [log](const std::string& l) {
    std::lock_guard lk(log->mu);
    log->lines.push_back(l);
  };
  return so;
}

TEST(RequestLog, OneJsonLinePerRequestWithStatusAndTokens) {
  auto log = std::make_shared<LogLines>();
  TestServer ts(stories_gguf(), logged_to(log, server::RequestLogFormat::Json));
  auto c = ts.client();
  int status = 0;
  const json plain = post_json(c, "/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 7}}, &status);
  ASSERT_EQ(status, 200);
  auto streamed = c.Post(
      "/v1/chat/completions",
      json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 5}, {"stream", true}}.dump(),
      "application/json");
  ASSERT_TRUE(streamed && streamed->status == 200);
  ASSERT_EQ(c.Get("/nowhere")->status, 404);
  const std::vector<std::string> lines = log->wait(3);
  ASSERT_EQ(lines.size(), 3u);
  std::vector<json> js;
  for (const std::string& l : lines) {
    EXPECT_EQ(l.find('\n'), std::string::npos) << l;
    js.push_back(json::parse(l));
  }
  std::sort(js.begin(), js.end(), [](const json& a, const json& b) { return a["path"] < b["path"]; });
  EXPECT_EQ(js[0]["path"], "/nowhere");
  EXPECT_EQ(js[0]["status"], 404);
  EXPECT_FALSE(js[0].contains("prompt_tokens"));
  EXPECT_EQ(js[1]["path"], "/v1/chat/completions");
  EXPECT_EQ(js[1]["status"], 200);
  EXPECT_EQ(js[1]["completion_tokens"], 5);
  EXPECT_GT(js[1]["prompt_tokens"], 0);
  EXPECT_EQ(js[2]["path"], "/v1/completions");
  EXPECT_EQ(js[2]["method"], "POST");
  EXPECT_EQ(js[2]["client"], "127.0.0.1");
  EXPECT_EQ(js[2]["prompt_tokens"], plain["usage"]["prompt_tokens"]);
  EXPECT_EQ(js[2]["completion_tokens"], plain["usage"]["completion_tokens"]);
  EXPECT_GE(js[2]["ttft_ms"].get<double>(), 0);
  EXPECT_GE(js[2]["total_ms"].get<double>(), js[2]["ttft_ms"].get<double>());
  EXPECT_EQ(js[2]["time"].get<std::string>().back(), 'Z');
}

TEST(RequestLog, TextLines) {
  auto log = std::make_shared<LogLines>();
  TestServer ts(stories_gguf(), logged_to(log, server::RequestLogFormat::Text));
  auto c = ts.client();
  int status = 0;
  post_json(c, "/v1/completions", {{"prompt", "Once upon"}, {"max_tokens", 3}}, &status);
  const auto lines = log->wait(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(" 127.0.0.1 POST /v1/completions 200 prompt="), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" generated=3 "), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace ferrum::test
