#include "server/json_body.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/ascii.h"
#include "server/api_error.h"
#include "server/http_field.h"
#include "server/http_server.h"

namespace ferrum::server {
namespace {

struct TooDeep {};

// "line L, column C" of the byte at `pos` (0-based); columns count characters, not UTF-8 bytes.
std::string where(std::string_view body, size_t pos) {
  pos = std::min(pos, body.size());
  const std::string_view before = body.substr(0, pos);
  const size_t line = std::count(before.begin(), before.end(), '\n') + 1;
  const size_t nl = before.rfind('\n');
  const std::string_view head = nl == std::string_view::npos ? before : before.substr(nl + 1);
  const size_t column =
      std::count_if(head.begin(), head.end(), [](unsigned char c) { return (c & 0xC0) != 0x80; }) + 1;
  return fmt::format("line {}, column {}", line, column);
}

// What the parser expected, in the words of the JSON a user writes.
std::string expected_words(std::string_view expected) {
  if (expected == "string literal") return "a key in double quotes";
  if (expected == "'[', '{', or a literal") return "a value";
  if (expected == "'}'") return "',' or '}'";
  if (expected == "']'") return "',' or ']'";
  return std::string(expected);
}

// The library's token names ("number literal", "end of input") as plain words.
std::string token_words(std::string_view token) {
  if (token == "end of input") return "end of the body";
  if (token.ends_with(" literal")) token.remove_suffix(8);  // "number literal" -> "number"
  return std::string(token);
}

// The problem the library describes in `what` ("...syntax error while parsing object - unexpected
// '}'; expected string literal"), without its exception names and internal terms.
std::string problem(std::string_view what) {
  const size_t dash = what.find(" - ");
  std::string_view detail = dash == std::string_view::npos ? what : what.substr(dash + 3);
  // The detail ends at its first ';' (what follows is the text read and the token expected).
  detail = detail.substr(0, detail.find(';'));
  std::string_view expected;
  for (std::string_view e : {"string literal", "'[', '{', or a literal", "':'", "'}'", "']'", "end of input"})
    if (what.ends_with("; expected " + std::string(e))) expected = e;
  std::string p;
  if (detail.starts_with("unexpected ")) {
    p = "unexpected " + token_words(detail.substr(11));
  } else if (detail.starts_with("invalid literal")) {
    p = expected == "end of input" ? "unexpected text after the JSON value"
                                   : "unexpected text (strings and keys need double quotes; the only bare "
                                     "words are true, false and null)";
    expected = {};
  } else if (detail.starts_with("invalid string: control character")) {
    p = "a control character (a line break, a tab) in a string must be escaped";
  } else if (detail.starts_with("invalid string: ill-formed UTF-8")) {
    p = "a string is not valid UTF-8";
  } else if (detail.starts_with("invalid string: forbidden character after backslash")) {
    p = "a backslash in a string starts no valid escape (\\\\, \\\", \\n, \\uXXXX...)";
  } else if (detail.starts_with("invalid string")) {
    p = "invalid \\u escape in a string";
  } else if (detail.starts_with("invalid number")) {
    p = "invalid number";
  } else {
    p = std::string(detail);
  }
  if (!expected.empty()) p += "; expected " + expected_words(expected);
  return p;
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body, int max_depth) {
  using json = nlohmann::json;
  if (body.empty()) throw ApiError(400, "the request body is empty; send a JSON object");
  // The callback sees every value with its depth as it is parsed; throwing stops the parser
  // before anything deeper is built.
  const json::parser_callback_t limit = [max_depth](int depth, json::parse_event_t, json&) {
    if (depth > max_depth) throw TooDeep{};
    return true;
  };
  try {
    return json::parse(body.begin(), body.end(), limit);
  } catch (const TooDeep&) {
    throw ApiError(400, fmt::format("the request body nests JSON deeper than {} levels", max_depth));
  } catch (const json::parse_error& e) {
    // e.byte: 1-based index of the last byte read, where the parser gave up.
    throw ApiError(400, fmt::format("the request body is not valid JSON: at {}: {}",
                                    where(body, e.byte > 0 ? e.byte - 1 : 0), problem(e.what())));
  } catch (const json::exception& e) {
    throw ApiError(400, fmt::format("the request body is not valid JSON: {}", problem(e.what())));
  }
}

void check_json_content_type(std::string_view content_type) {
  const std::string_view type = trim_ows(content_type.substr(0, content_type.find(';')));
  if (type.empty()) return;  // no Content-Type: taken as JSON, as llama-server does
  if (ascii_lower(type) != "application/json") {
    const std::string hint =
        ascii_lower(type) == "application/x-www-form-urlencoded"
            ? " (curl -d sends that type unless given -H 'Content-Type: application/json')"
            : "";
    throw ApiError(415,
                   fmt::format("request bodies must be JSON sent with 'Content-Type: application/json', not "
                               "'{}'{}",
                               type, hint),
                   "invalid_request_error", "", "unsupported_media_type");
  }
  // Parameters: only a UTF-8 charset (JSON text is UTF-8).
  std::string_view params = content_type.substr(std::min(content_type.find(';'), content_type.size()));
  while (!params.empty()) {
    params.remove_prefix(1);  // ';'
    const std::string_view param = trim_ows(params.substr(0, params.find(';')));
    params = params.substr(std::min(params.find(';'), params.size()));
    const size_t eq = param.find('=');
    if (eq == std::string_view::npos || ascii_lower(trim_ows(param.substr(0, eq))) != "charset") continue;
    std::string charset = ascii_lower(trim_ows(param.substr(eq + 1)));
    if (charset.size() >= 2 && charset.front() == '"' && charset.back() == '"')
      charset = charset.substr(1, charset.size() - 2);
    if (charset != "utf-8" && charset != "utf8")
      throw ApiError(415, fmt::format("request bodies must be UTF-8 JSON; got charset '{}'", charset),
                     "invalid_request_error", "", "unsupported_media_type");
  }
}

void require_method(const HttpRequest& req, const char* method) {
  if (req.method != method)
    throw ApiError(405, fmt::format("method {} not allowed for {} (use {})", req.method, req.path, method));
}

void require_json_post(const HttpRequest& req) {
  require_method(req, "POST");
  check_json_content_type(req.header("Content-Type"));
}

}  // namespace ferrum::server
