// The edges of a request before the API sees it: bodies that are not JSON get plain words with the
// line and column (not the parser library's exception text), POST bodies must be sent as
// application/json (415 otherwise, in OpenAI's error shape), and --served-model-alias names are
// accepted as the model and listed by /v1/models.
#include <gtest/gtest.h>

#include "raw_http.h"
#include "server/api_error.h"
#include "server/json_body.h"
#include "server_fixture.h"

namespace ferrum {
namespace {

using json = nlohmann::json;
using test::TestServer;

// The message of the ApiError that parse_json_body throws on `body` ("" when it parses).
std::string parse_message(const std::string& body, int* status = nullptr) {
  try {
    server::parse_json_body(body);
  } catch (const server::ApiError& e) {
    if (status) *status = e.status;
    return e.what();
  }
  return "";
}

TEST(JsonBody, ParseErrorsInPlainWordsWithLineAndColumn) {
  const std::string pre = "the request body is not valid JSON: at ";
  struct Case {
    std::string body, message;
  };
  const std::vector<Case> cases = {
      {"{\n  \"a\": 1,\n}", "line 3, column 1: unexpected '}'; expected a key in double quotes"},
      {"{\"a\": }", "line 1, column 7: unexpected '}'; expected a value"},
      {"{\"a\" 1}", "line 1, column 6: unexpected number; expected ':'"},
      {"{\"a\": 1 \"b\": 2}", "line 1, column 11: unexpected string; expected ',' or '}'"},
      {"[1 2]", "line 1, column 4: unexpected number; expected ',' or ']'"},
      {"{\"a\": [1,", "line 1, column 10: unexpected end of the body; expected a value"},
      {"{\"a\": 1} x", "line 1, column 10: unexpected text after the JSON value"},
      {"{'a': 1}",
       "line 1, column 2: unexpected text (strings and keys need double quotes; the only bare words are "
       "true, false and null)"},
      {"model=x&prompt=y",
       "line 1, column 1: unexpected text (strings and keys need double quotes; the only bare words are "
       "true, false and null)"},
      {"{\"a\": \"x\ny\"}",  // at the line break itself, the end of line 1
       "line 1, column 9: a control character (a line break, a tab) in a string must be escaped"},
      {"{\"é\": \"\xff\"}", "line 1, column 8: a string is not valid UTF-8"},  // columns count characters
      {"{\"a\": \"\\q\"}",
       "line 1, column 9: a backslash in a string starts no valid escape (\\\\, \\\", \\n, "
       "\\uXXXX...)"},
      {"{\"a\": \"\\u12\"}", "line 1, column 12: invalid \\u escape in a string"},
      {"{\"a\": -}", "line 1, column 8: invalid number"},
      {"   ", "line 1, column 4: unexpected end of the body; expected a value"},
  };
  for (const Case& c : cases) {
    int status = 0;
    const std::string m = parse_message(c.body, &status);
    EXPECT_EQ(m, pre + c.message) << c.body;
    EXPECT_EQ(status, 400);
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  }
  EXPECT_EQ(parse_message("{\"a\": [1, {\"b\": null}]}"), "");
  EXPECT_EQ(parse_message(""), "the request body is empty; send a JSON object");
}

TEST(JsonBody, ContentTypeMustBeJson) {
  for (const char* ok :
       {"application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8",
        " application/json ; charset=\"utf8\"", "application/json; foo=bar", ""})
    EXPECT_NO_THROW(server::check_json_content_type(ok)) << ok;
  for (const char* bad :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
        "application/jsonx", "application/json; charset=latin1", "text/json"}) {
    try {
      server::check_json_content_type(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const server::ApiError& e) {
      EXPECT_EQ(e.status, 415) << bad;
      EXPECT_EQ(e.code, "unsupported_media_type");
    }
  }
  try {
    server::check_json_content_type("application/x-www-form-urlencoded");
  } catch (const server::ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("-H 'Content-Type: application/json'"), std::string::npos)
        << e.what();
  }
}

// A POST over a raw socket with the given header lines: the status and the body.
std::pair<int, json> raw_post(int port, const std::string& path, const std::string& headers,
                              const std::string& body) {
  test::RawConn conn(port);
  EXPECT_TRUE(conn.ok());
  conn.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers +
            "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  const std::string r = conn.recv_all(std::chrono::seconds(120));
  const size_t head = r.find("\r\n\r\n");
  return {test::status_of(r),
          json::parse(head == std::string::npos ? "" : r.substr(head + 4), nullptr, false)};
}

TEST(ServerEdges, PostBodiesMustBeJson) {
  TestServer ts(test::stories_gguf());
  const std::string body = R"({"prompt":"Once","max_tokens":2})";
  for (const char* path :
       {"/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/load_lora_adapter"}) {
    const auto [status, r] = raw_post(ts.port, path, "Content-Type: text/plain\r\n", body);
    EXPECT_EQ(status, 415) << path << " " << r.dump();
    ASSERT_TRUE(r.is_object() && r.contains("error")) << r.dump();
    EXPECT_EQ(r["error"]["type"], "invalid_request_error");
    EXPECT_EQ(r["error"]["code"], "unsupported_media_type");
    EXPECT_TRUE(r["error"].contains("param"));
    EXPECT_NE(r["error"]["message"].get<std::string>().find("'text/plain'"), std::string::npos) << r.dump();
  }
  // What curl -d sends by default: the answer says how to send JSON.
  auto [status, r] =
      raw_post(ts.port, "/v1/completions", "Content-Type: application/x-www-form-urlencoded\r\n", body);
  EXPECT_EQ(status, 415);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("-H 'Content-Type: application/json'"),
            std::string::npos)
      << r.dump();
  // Any case, with a UTF-8 charset, or no Content-Type at all (taken as JSON).
  std::tie(status, r) =
      raw_post(ts.port, "/v1/completions", "Content-Type: Application/JSON; charset=UTF-8\r\n", body);
  EXPECT_EQ(status, 200) << r.dump();
  std::tie(status, r) = raw_post(ts.port, "/v1/completions", "", body);
  EXPECT_EQ(status, 200) << r.dump();
  // Invalid JSON over HTTP: plain words.
  std::tie(status, r) = raw_post(ts.port, "/v1/completions", "Content-Type: application/json\r\n",
                                 "{\n  \"prompt\": \"Once\",\n}");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(
      r["error"]["message"],
      "the request body is not valid JSON: at line 3, column 1: unexpected '}'; expected a key in double "
      "quotes");
}

TEST(ServerEdges, ModelAliasesAreAcceptedAndListed) {
  server::ServerOptions so;
  so.model_aliases = {"gpt-4o-mini", "test-model", "llama3", "gpt-4o-mini"};  // repeats listed once
  TestServer ts(test::stories_gguf(), so);
  auto c = ts.client();
  auto g = c.Get("/v1/models");
  ASSERT_TRUE(g);
  const json list = json::parse(g->body);
  ASSERT_EQ(list["data"].size(), 3u) << list.dump();
  EXPECT_EQ(list["data"][0]["id"], "test-model");
  EXPECT_EQ(list["data"][1]["id"], "gpt-4o-mini");
  EXPECT_EQ(list["data"][2]["id"], "llama3");
  EXPECT_EQ(list["data"][2]["root"], "test-model");
  g = c.Get("/v1/models/llama3");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(json::parse(g->body)["id"], "llama3");
  for (const char* model : {"gpt-4o-mini", "llama3", "test-model", "ferrum"}) {
    int status = 0;
    const json r = test::post_json(
        c, "/v1/chat/completions",
        {{"model", model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}},
        &status);
    EXPECT_EQ(status, 200) << model << " " << r.dump();
    EXPECT_EQ(r["model"], "test-model");  // answers name the model id, as vLLM's do
  }
  int status = 0;
  const json r = test::post_json(c, "/v1/completions", {{"model", "gpt-5"}, {"prompt", "a"}}, &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(r["error"]["code"], "model_not_found");
  EXPECT_THROW(TestServer(test::stories_gguf(),
                          [] {
                            server::ServerOptions bad;
                            bad.model_aliases = {""};
                            return bad;
                          }()),
               Error);
}

}  // namespace
}  // namespace ferrum
