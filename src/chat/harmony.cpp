#include "chat/harmony.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace ferrum::chat {
namespace {

constexpr std::string_view kMessage = "<|message|>", kStart = "<|start|>", kChannel = "<|channel|>";
// What ends a message's body.
constexpr std::array<std::string_view, 4> kTerminators = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
constexpr std::array<std::string_view, 7> kMarkers = {
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|call|>", "<|return|>"};

constexpr size_t kLongestMarker = std::string_view("<|constrain|>").size();

// Length of the longest suffix of `s` that could begin a marker (held until the next piece).
size_t marker_prefix_at_end(std::string_view s) {
  const size_t lt = s.rfind('<');
  if (lt == std::string_view::npos || s.size() - lt >= kLongestMarker) return 0;
  const std::string_view tail = s.substr(lt);
  for (std::string_view m : kMarkers)
    if (m.substr(0, std::min(m.size(), tail.size())) == tail) return tail.size();
  return 0;
}

// The word after `key` in a header ("" when the key is absent): up to a space or a marker.
std::string word_after(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return "";
  std::string_view rest = header.substr(at + key.size());
  const size_t end = rest.find_first_of(" <\n");
  return std::string(rest.substr(0, end));
}

// Whether a first header could still begin with `s` (after an optional <|start|>): a channel, the
// role or a recipient. Anything else is an answer that does not use the format.
bool could_be_header(std::string_view s) {
  if (kStart.starts_with(s)) return true;
  if (s.starts_with(kStart)) s.remove_prefix(kStart.size());
  for (std::string_view h :
       {kChannel, std::string_view("assistant"), std::string_view(" to="), std::string_view("to=")})
    if (h.starts_with(s) || s.starts_with(h)) return true;
  return false;
}

}  // namespace

std::string HarmonyStream::push(std::string_view text) {
  buf_ += text;
  return drain(false);
}

std::string HarmonyStream::finish() {
  std::string out = drain(true);
  if (think_open_) out += "</think>";
  think_open_ = false;
  return out;
}

std::string HarmonyStream::drain(bool final) {
  std::string out;
  for (;;) {
    if (!in_body_) {
      if (first_ && !buf_.empty() && !could_be_header(buf_)) {  // no harmony: plain text
        first_ = false;
        in_body_ = true;
        kind_ = Kind::Content;
        answered_ = true;
        continue;
      }
      const size_t at = buf_.find(kMessage);
      if (at == std::string::npos) {
        if (final) {  // the output ended in a header: nothing to show, unless it was plain text
          if (first_ && buf_.find("<|") == std::string::npos) out += buf_;
          buf_.clear();
        }
        return out;
      }
      start_message(buf_.substr(0, at), out);
      buf_.erase(0, at + kMessage.size());
      first_ = false;
      in_body_ = true;
      continue;
    }
    size_t end = std::string::npos, len = 0;
    for (std::string_view t : kTerminators)
      if (const size_t at = buf_.find(t); at < end) end = at, len = t.size();
    if (end == std::string::npos) {
      const size_t keep = final ? 0 : marker_prefix_at_end(buf_);
      body(std::string_view(buf_).substr(0, buf_.size() - keep), out);
      buf_.erase(0, buf_.size() - keep);
      if (final) end_message(out);
      return out;
    }
    body(std::string_view(buf_).substr(0, end), out);
    buf_.erase(0, end + len);
    end_message(out);
    in_body_ = false;
  }
}

void HarmonyStream::start_message(const std::string& header, std::string& out) {
  const std::string to = word_after(header, "to="), channel = word_after(header, kChannel);
  if (!to.empty()) {
    kind_ = to.starts_with("functions.") ? Kind::Call : Kind::Dropped;  // built-in tools: not run here
    call_name_ = to.substr(std::min(to.size(), std::string_view("functions.").size()));
    call_args_.clear();
  } else if (channel == "analysis") {
    kind_ = answered_ ? Kind::Dropped : Kind::Reasoning;
  } else {
    kind_ = Kind::Content;  // final, or a commentary preamble
  }
  if (kind_ == Kind::Reasoning) {
    if (!think_open_)
      out += "<think>";
    else
      out += "\n";  // a further analysis message in the same block
    think_open_ = true;
  } else if (kind_ != Kind::Dropped) {
    if (think_open_) out += "</think>";
    think_open_ = false;
    answered_ = true;
  }
}

void HarmonyStream::body(std::string_view text, std::string& out) {
  if (kind_ == Kind::Reasoning || kind_ == Kind::Content) out += text;
  if (kind_ == Kind::Call) call_args_ += text;
}

void HarmonyStream::end_message(std::string& out) {
  if (kind_ != Kind::Call) return;
  // The arguments as the JSON the model wrote when it is JSON, else as a string.
  nlohmann::ordered_json args = nlohmann::ordered_json::parse(call_args_, nullptr, false);
  if (args.is_discarded()) args = call_args_;
  const nlohmann::ordered_json call = {{"name", call_name_}, {"arguments", args}};
  // (Bytes that are not UTF-8, which JSON cannot hold, become U+FFFD.)
  out += "<tool_call>\n" + call.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n</tool_call>\n";
  kind_ = Kind::Dropped;  // written once
}

std::string harmony_to_text(std::string_view answer) {
  HarmonyStream s;
  std::string out = s.push(answer);
  return out + s.finish();
}

}  // namespace ferrum::chat
