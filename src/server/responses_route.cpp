// The Responses API's routes on the server: POST /v1/responses (a chat request underneath, see
// responses_request.h), GET /v1/responses/{id} and DELETE /v1/responses/{id} for stored ones.
#include <ctime>

#include "server/api_error.h"
#include "server/http_server.h"
#include "server/json_body.h"
#include "server/lora_registry.h"
#include "server/response_store.h"
#include "server/responses_answer.h"
#include "server/responses_request.h"
#include "server/server.h"
#include "server/stream_answer.h"

namespace ferrum::server {

using json = nlohmann::json;

void Server::responses(const HttpRequest& req, HttpResponse& res, const ClientProbe& probe,
                       std::string_view p) {
  if (p != "/responses") {  // a stored response
    const std::string id(p.substr(std::string_view("/responses/").size()));
    if (req.method != "GET" && req.method != "DELETE")
      throw ApiError(405,
                     fmt::format("method {} not allowed for {} (use GET or DELETE)", req.method, req.path));
    if (req.method == "DELETE") {
      if (!responses_->erase(id))
        throw ApiError(404, fmt::format("Response with id '{}' not found.", id), "invalid_request_error", "",
                       "not_found");
      res.body = body_text({{"id", id}, {"object", "response"}, {"deleted", true}});
      return;
    }
    const auto r = responses_->get(id);
    if (!r)
      throw ApiError(404, fmt::format("Response with id '{}' not found.", id), "invalid_request_error", "",
                     "not_found");
    res.body = body_text(r->response);
    return;
  }
  if (req.method != "POST")
    throw ApiError(405, fmt::format("method {} not allowed for {} (use POST)", req.method, req.path));
  check_json_content_type(req.header("Content-Type"));
  const json body = parse_json_body(req.body);
  json previous = json::array();
  if (const std::string prev = previous_response_id_of(body); !prev.empty()) {
    const auto r = responses_->get(prev);
    if (!r)
      throw ApiError(404,
                     fmt::format("Previous response with id '{}' not found (kept {} s after it was made; "
                                 "'store': false responses are not kept).",
                                 prev, opt_.responses_ttl_s),
                     "invalid_request_error", "previous_response_id", "previous_response_not_found");
    previous = r->conversation;
  }
  ResponsesRequest rr = parse_responses_request(body, previous);
  Prepared pp = prepare(rr.chat_body, true);
  auto handle = submit(pp);
  res.log = usage_log(handle);
  ResponseHeader h{response_item_id("resp"),
                   pp.lora ? pp.lora->name : pp.model->id,
                   static_cast<int64_t>(std::time(nullptr)),
                   std::move(rr.echo),
                   rr.previous_response_id,
                   rr.store};
  // A finished response is kept with its conversation (store: true) for a later previous_response_id.
  auto keep = [store = responses_, conversation = std::move(rr.conversation),
               keep = rr.store](const json& r) {
    if (!keep || r["status"] == "failed") return;
    json conv = conversation;
    for (json& m : answer_messages(r["output"])) conv.push_back(std::move(m));
    store->put(r["id"], StoredResponse{r, std::move(conv)});
  };
  if (rr.stream) {
    auto s = std::make_shared<ResponseStream>(std::move(h), std::move(pp.pr), handle, std::move(keep));
    stream_answer(res, s, pp.lora ? pp.lora->counters : nullptr, ": keep-alive\n\n", pp.model);
    return;
  }
  Collected c;
  if (!collect(*handle, probe, c, res, pp.lora)) return;
  const json r = response_object(h, response_output(pp.pr, c.text, c.finish_reason), c);
  keep(r);
  res.body = body_text(r);
}

}  // namespace ferrum::server
