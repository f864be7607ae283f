#include "server/json_body.h"

#include "server/api_error.h"

namespace ferrum::server {
namespace {

struct TooDeep {};

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
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
}

}  // namespace ferrum::server
