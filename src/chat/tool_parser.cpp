#include "chat/tool_parser.h"

#include <nlohmann/json.hpp>
#include <optional>

namespace ferrum::chat {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;  // model output is untrusted: bound the nesting before recursing on it
constexpr std::string_view kSpace = " \t\r\n";

struct TooDeep {};

// `s` as JSON, or nothing when it is not (or nests deeper than kMaxDepth).
std::optional<json> parse_json(std::string_view s) {
  const json::parser_callback_t limit = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) throw TooDeep{};
    return true;
  };
  try {
    return json::parse(s.begin(), s.end(), limit);
  } catch (const TooDeep&) {
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

std::string_view rtrim(std::string_view s) {
  const size_t e = s.find_last_not_of(kSpace);
  return e == std::string_view::npos ? std::string_view{} : s.substr(0, e + 1);
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// {"name": "...", <args_key>: {...}} (the arguments may also be a JSON string holding the object).
std::optional<ToolCall> call_of(const json& j, const char* args_key) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const char* key = j.contains(args_key) ? args_key : "arguments";
  if (!j.contains(key)) return std::nullopt;
  json args = j[key];
  if (args.is_string()) {
    auto inner = parse_json(args.get<std::string>());
    if (!inner) return std::nullopt;
    args = std::move(*inner);
  }
  if (!args.is_object()) return std::nullopt;
  return ToolCall{j["name"].get<std::string>(), args.dump()};
}

// `rest` without a proper prefix of `tag` at its end (trailing whitespace dropped first).
std::string_view without_partial_tag(std::string_view rest, std::string_view tag) {
  rest = rtrim(rest);
  for (size_t n = std::min(tag.size() - 1, rest.size()); n > 0; --n)
    if (rest.ends_with(tag.substr(0, n))) return rest.substr(0, rest.size() - n);
  return rest;
}

// <tool_call>JSON</tool_call>, repeated; the last closing tag may be missing (stopped at EOS).
ParsedAnswer parse_hermes(std::string_view text, bool cut) {
  constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
  const size_t first = text.find(open);
  if (first == std::string_view::npos) return {std::string(text), {}};
  ParsedAnswer a{std::string(rtrim(text.substr(0, first))), {}};
  std::string_view rest = text.substr(first);
  while (!trim(rest).empty()) {
    rest = rest.substr(rest.find_first_not_of(kSpace));
    // A cut answer may end inside the opening tag of its next call.
    if (cut && !a.calls.empty() && rest.size() < open.size() && open.starts_with(rest)) return a;
    if (!rest.starts_with(open)) return {std::string(text), {}};
    rest.remove_prefix(open.size());
    // The first closing tag after which the body is valid JSON (a tag inside a string value is not one).
    std::optional<ToolCall> call;
    size_t end = rest.find(close);
    while (end != std::string_view::npos) {
      if (auto j = parse_json(rest.substr(0, end))) call = call_of(*j, "arguments");
      if (call) break;
      end = rest.find(close, end + 1);
    }
    if (!call) {  // no closing tag: the rest is the call
      if (auto j = parse_json(cut ? without_partial_tag(rest, close) : rest)) call = call_of(*j, "arguments");
      // Unfinished at the end of a cut answer: the calls before it are the answer.
      if (!call && cut && !a.calls.empty() && rest.find(close) == std::string_view::npos) return a;
      if (!call) return {std::string(text), {}};
      end = rest.size();
    }
    a.calls.push_back(std::move(*call));
    rest = end + close.size() <= rest.size() ? rest.substr(end + close.size()) : std::string_view{};
  }
  return a;
}

// The whole answer is one {"name": ..., "parameters": {...}}, optionally after <|python_tag|>.
ParsedAnswer parse_llama3(std::string_view text) {
  std::string_view body = trim(text);
  if (body.starts_with("<|python_tag|>")) body = trim(body.substr(14));
  if (body.starts_with("{"))
    if (auto j = parse_json(body))
      if (auto call = call_of(*j, "parameters")) return {"", {std::move(*call)}};
  return {std::string(text), {}};
}

// The objects of a JSON array cut short (`[{...}, {...}, {"na`) that were finished, each parsed;
// nothing when an element is not an object or a finished one is not JSON.
std::optional<json> finished_objects(std::string_view s) {
  json out = json::array();
  int depth = 1;  // s[0] is the array's '['
  bool in_string = false, escaped = false;
  size_t start = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (depth == 1) {  // between elements
      if (c == '{') {
        start = i;
        depth = 2;
      } else if (c != ',' && kSpace.find(c) == std::string_view::npos) {
        return std::nullopt;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return std::nullopt;
    } else if ((c == '}' || c == ']') && --depth == 1) {
      auto j = parse_json(s.substr(start, i + 1 - start));
      if (!j) return std::nullopt;
      out.push_back(std::move(*j));
    }
  }
  return out;
}

// `open`[{...}, ...]`close` (the closing marker optional, or none): Mistral's [TOOL_CALLS][...] and
// Phi-4-mini's <|tool_call|>[...]<|/tool_call|>. The markers are tokens a detokenizer may leave
// out, so an answer that is only such an array counts too.
ParsedAnswer parse_call_array(std::string_view text, std::string_view open, std::string_view close,
                              bool cut) {
  const size_t at = text.find(open);
  const std::string_view before = at == std::string_view::npos ? std::string_view{} : text.substr(0, at);
  std::string_view body = trim(at == std::string_view::npos ? text : text.substr(at + open.size()));
  if (!close.empty())
    if (const size_t end = body.find(close); end != std::string_view::npos) body = trim(body.substr(0, end));
  auto j = body.starts_with("[") ? parse_json(body) : std::nullopt;
  if (!j && cut && body.starts_with("[")) j = finished_objects(body);  // cut inside the array
  if (!j || !j->is_array() || j->empty()) return {std::string(text), {}};
  ParsedAnswer a{std::string(rtrim(before)), {}};
  for (const json& c : *j) {
    auto call = call_of(c, "arguments");
    if (!call) return {std::string(text), {}};
    a.calls.push_back(std::move(*call));
  }
  return a;
}

}  // namespace

ParsedAnswer parse_tool_answer(ToolStyle style, std::string_view text, bool cut) {
  switch (style) {
    case ToolStyle::Llama3:
      return parse_llama3(text);
    case ToolStyle::Mistral:
      return parse_call_array(text, "[TOOL_CALLS]", "", cut);
    case ToolStyle::Phi4:
      return parse_call_array(text, "<|tool_call|>", "<|/tool_call|>", cut);
    case ToolStyle::Hermes:
    case ToolStyle::Harmony:  // rewritten into the Hermes form (harmony.h)
    case ToolStyle::Default:
      break;
  }
  return parse_hermes(text, cut);
}

}  // namespace ferrum::chat
