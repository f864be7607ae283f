// Request bodies as JSON, with a nesting limit: the parser itself is iterative, but everything
// downstream (copies, dumps, conversion into template values) recurses, so a body nested
// thousands of levels deep must be refused before it reaches them.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace ferrum::server {

constexpr int kMaxJsonDepth = 64;

// Throws ApiError(400) naming the problem: empty body, invalid JSON (in plain words, with the line
// and column where the parser gave up), nesting deeper than max_depth.
nlohmann::json parse_json_body(std::string_view body, int max_depth = kMaxJsonDepth);

// Throws ApiError(415) unless a request's Content-Type is application/json (any case, parameters
// allowed but a charset other than UTF-8). None at all is taken as JSON, as llama-server does.
void check_json_content_type(std::string_view content_type);

struct HttpRequest;
// Throws ApiError(405) naming the method to use unless the request's is `method`.
void require_method(const HttpRequest& req, const char* method);
// A POST with a JSON body (415 otherwise, before the body is parsed).
void require_json_post(const HttpRequest& req);

}  // namespace ferrum::server
