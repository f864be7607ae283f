// The Responses API's answers built from engine events: the `response` object of a non-streamed
// request, and the stream of typed events of a streamed one (response.created, response.in_progress,
// response.output_item.added, response.reasoning_text.delta, response.content_part.added,
// response.output_text.delta, response.function_call_arguments.delta, ..., response.completed or
// response.incomplete). The output items: the reasoning (a thinking template's, kept apart), the
// assistant message (unless the answer is only tool calls), then each function call.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/reasoning.h"
#include "chat/tool_stream.h"
#include "engine/request.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace ferrum::server {

struct ResponseHeader {
  std::string id, model;
  int64_t created = 0;
  nlohmann::json echo;  // the request's settings (responses_request.h)
  std::string previous_response_id;
  bool store = true;
};

// A fresh id for a response ("resp"), message ("msg"), reasoning ("rs") or function call ("fc") item.
std::string response_item_id(const char* prefix);

// The output items of a finished answer whose generated text is `text`.
nlohmann::json response_output(const ParsedRequest& pr, const std::string& text,
                               const std::string& finish_reason);

// The response object; status from the finish reason (completed, incomplete, failed).
nlohmann::json response_object(const ResponseHeader& h, nlohmann::json output, const Collected& c);

// The answer's output items as chat messages (an assistant message with its content and tool
// calls; the reasoning left out), for the stored conversation.
nlohmann::json answer_messages(const nlohmann::json& output);

// A streamed answer as the Responses API's server-sent events; next() waits up to `poll` for an
// event and returns false once the response is complete. `done` gets the final response object.
class ResponseStream {
 public:
  ResponseStream(ResponseHeader h, ParsedRequest pr, std::shared_ptr<RequestHandle> handle,
                 std::function<void(const nlohmann::json& response)> done);
  bool next(std::string& out);
  bool finished() const { return finished_; }
  int completion_tokens() const { return completion_tokens_; }
  RequestHandle& handle() { return *handle_; }

 private:
  void event(std::string& out, const char* type, nlohmann::json e);
  void reasoning_text(std::string& out, const std::string& s);
  void close_reasoning(std::string& out);
  void open_message(std::string& out);
  void message_text(std::string& out, const std::string& s);
  void close_message(std::string& out);
  void function_calls(std::string& out, const nlohmann::json& tool_calls);
  bool finish(std::string& out, const RequestEvent& e);
  nlohmann::json snapshot(const char* status) const;

  ResponseHeader h_;
  ParsedRequest pr_;
  std::shared_ptr<RequestHandle> handle_;
  std::function<void(const nlohmann::json&)> done_;
  std::optional<chat::ReasoningStream> reasoning_;
  chat::ToolStreamSplitter splitter_;                // with tools: the content so far, and how much was sent
  nlohmann::json output_ = nlohmann::json::array();  // the items closed so far
  std::string rs_id_, msg_id_, rs_text_, msg_text_;
  bool started_ = false, finished_ = false, rs_open_ = false, msg_open_ = false;
  int seq_ = 0, completion_tokens_ = 0;
};

}  // namespace ferrum::server
