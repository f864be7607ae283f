// Hands a streamed answer (SseAnswer, MessageStream, OllamaStream, ResponseStream) to the
// transport: its next() fills the body, and a client gone first cancels the engine request. `keep`
// (the model's lease) is held until the transport lets go of the answer.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "server/http_server.h"
#include "server/lora_registry.h"

namespace ferrum::server {

// How long an answer waits for the engine's next event before it looks at its client again.
inline constexpr std::chrono::milliseconds kEnginePoll{100};

template <typename Stream>
void stream_answer(HttpResponse& res, std::shared_ptr<Stream> s, std::shared_ptr<LoraCounters> counters,
                   std::string keepalive, std::shared_ptr<const void> keep,
                   const char* content_type = "text/event-stream") {
  res.content_type = content_type;
  res.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  res.stream.next = [s](std::string& out) { return s->next(out); };
  res.stream.keepalive = std::move(keepalive);
  res.stream.closed = [s, counters, keep = std::move(keep)](bool) {
    if (!s->finished()) s->handle().cancel();  // the client went away first
    if (counters) counters->completion_tokens += s->completion_tokens();
  };
}

}  // namespace ferrum::server
