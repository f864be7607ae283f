#include "server/openai_request.h"

#include <algorithm>
#include <random>

#include "chat/harmony.h"
#include "chat/tool_grammar.h"
#include "chat/tool_prompt.h"
#include "server/api_error.h"

namespace ferrum::server {
namespace {

using json = nlohmann::json;
constexpr size_t kMaxStop = 4;  // OpenAI's limit
constexpr size_t kMaxStopBytes = 1024;

double get_number(const json& b, const char* k, double lo, double hi) {
  const json& v = b[k];
  if (!v.is_number()) bad_request(k, fmt::format("'{}' must be a number (got {})", k, v.type_name()));
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    bad_request(k, fmt::format("'{}' must be between {} and {} (got {})", k, lo, hi, x));
  return x;
}

int64_t get_int(const json& b, const char* k, int64_t lo, int64_t hi) {
  const json& v = b[k];
  if (!v.is_number_integer()) {
    if (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()) &&
        std::abs(v.get<double>()) < 1e15)
      return get_int(json{{k, static_cast<int64_t>(v.get<double>())}}, k, lo, hi);
    bad_request(k, fmt::format("'{}' must be an integer (got {})", k, v.type_name()));
  }
  const int64_t x = v.is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
                        : v.get<int64_t>();
  if (x < lo || x > hi) bad_request(k, fmt::format("'{}' must be between {} and {} (got {})", k, lo, hi, x));
  return x;
}

// The sampling fields take the ranges the engine's validation (and the CLI's flags) use.
double get_number(const json& b, const char* k, const ParamRange& r) {
  return get_number(b, k, r.lo, r.hi);
}
int64_t get_int(const json& b, const char* k, const ParamRange& r) {
  return get_int(b, k, static_cast<int64_t>(r.lo), static_cast<int64_t>(r.hi));
}

bool get_bool(const json& b, const char* k) {
  if (!b[k].is_boolean()) bad_request(k, fmt::format("'{}' must be a boolean (got {})", k, b[k].type_name()));
  return b[k].get<bool>();
}

void check_model(const json& b, const std::vector<std::string>& names, ParsedRequest& r) {
  if (!has_field(b, "model")) return;
  if (!b["model"].is_string()) bad_request("model", "'model' must be a string");
  r.model = b["model"].get<std::string>();
  if (std::find(names.begin(), names.end(), r.model) == names.end())
    throw ApiError(
        404, fmt::format("The model '{}' does not exist; this server serves '{}'", r.model, names.front()),
        "invalid_request_error", "model", "model_not_found");
}

// `response_format` ({"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
// "schema", "strict"}}) and llama.cpp's `grammar` (GBNF text); the grammar itself is compiled
// (and its errors reported) by the server.
void parse_grammar(const json& b, ParsedRequest& r) {
  using Kind = grammar::GrammarSpec::Kind;
  if (has_field(b, "grammar")) {
    if (!b["grammar"].is_string()) bad_request("grammar", "'grammar' must be a string (GBNF)");
    r.grammar = grammar::GrammarSpec{Kind::Gbnf, b["grammar"].get<std::string>()};
    r.grammar_param = "grammar";
  }
  if (!has_field(b, "response_format")) return;
  const json& rf = b["response_format"];
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
    bad_request("response_format", "'response_format' must be an object with a string 'type'");
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return;
  if (r.grammar) bad_request("grammar", "'grammar' and a JSON 'response_format' exclude each other");
  r.grammar_param = "response_format";
  if (type == "json_object") {
    r.grammar = grammar::GrammarSpec{Kind::JsonObject, ""};
    return;
  }
  if (type != "json_schema")
    bad_request(
        "response_format.type",
        fmt::format("response_format type '{}' is not supported (text, json_object, json_schema)", type));
  if (!rf.contains("json_schema") || !rf["json_schema"].is_object())
    bad_request("response_format.json_schema",
                "response_format 'json_schema' must be an object with a 'schema'");
  const json& js = rf["json_schema"];
  if (js.contains("name") && !js["name"].is_string())
    bad_request("response_format.json_schema.name", "'name' must be a string");
  if (js.contains("strict") && !js["strict"].is_null() && !js["strict"].is_boolean())
    bad_request("response_format.json_schema.strict", "'strict' must be a boolean");
  if (!js.contains("schema") || !(js["schema"].is_object() || js["schema"].is_boolean()))
    bad_request("response_format.json_schema.schema", "response_format json_schema needs a 'schema' object");
  r.grammar = grammar::GrammarSpec{Kind::JsonSchema, js["schema"].dump()};
  r.grammar_param = "response_format.json_schema.schema";
}

// tool_choice "required" or a named function: the grammar of the style's call syntax makes the
// answer a call whose arguments follow the function's parameter schema.
void parse_forced_tool_call(ParsedRequest& r) {
  if (r.grammar)
    bad_request(
        "tool_choice",
        fmt::format("tool_choice '{}' forces a tool call, which excludes '{}'",
                    r.tools.choice.mode == chat::ToolChoice::Mode::Named ? r.tools.choice.name : "required",
                    r.grammar_param == "grammar" ? "grammar" : "response_format"));
  r.grammar =
      grammar::GrammarSpec{grammar::GrammarSpec::Kind::Gbnf, chat::tool_call_gbnf(r.tool_style, r.tools)};
  r.grammar_param = "tools";
}

// Fields shared by both endpoints. OpenAI defaults: temperature 1, top_p 1, no top-k / min-p.
void parse_common(const json& b, const Tokenizer& tok, ParsedRequest& r) {
  SamplingParams& s = r.params.sampling;
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.penalty_last_n = -1;
  if (has_field(b, "n") && get_int(b, "n", INT64_MIN, INT64_MAX) != 1)
    bad_request("n", "only n = 1 is supported");
  if (has_field(b, "best_of") && get_int(b, "best_of", INT64_MIN, INT64_MAX) != 1)
    bad_request("best_of", "only best_of = 1 is supported");
  if (has_field(b, "temperature"))
    s.temperature = static_cast<float>(get_number(b, "temperature", sampling_range::temperature));
  if (has_field(b, "top_p")) s.top_p = static_cast<float>(get_number(b, "top_p", sampling_range::top_p));
  if (has_field(b, "top_k")) s.top_k = static_cast<int>(get_int(b, "top_k", sampling_range::top_k));
  if (has_field(b, "min_p")) s.min_p = static_cast<float>(get_number(b, "min_p", sampling_range::min_p));
  if (has_field(b, "presence_penalty"))
    s.presence_penalty =
        static_cast<float>(get_number(b, "presence_penalty", sampling_range::presence_penalty));
  if (has_field(b, "frequency_penalty"))
    s.frequency_penalty =
        static_cast<float>(get_number(b, "frequency_penalty", sampling_range::frequency_penalty));
  if (has_field(b, "repetition_penalty"))
    s.repeat_penalty =
        static_cast<float>(get_number(b, "repetition_penalty", sampling_range::repeat_penalty));
  if (has_field(b, "seed")) {
    const json& v = b["seed"];
    if (!v.is_number_integer()) bad_request("seed", "'seed' must be an integer");
    s.seed = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
  } else {
    s.seed = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
  }
  if (has_field(b, "logit_bias")) {
    const json& lb = b["logit_bias"];
    if (!lb.is_object())
      bad_request("logit_bias", "'logit_bias' must be an object mapping token ids to numbers");
    for (const auto& [k, v] : lb.items()) {
      char* end = nullptr;
      const long id = std::strtol(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0' || id < 0 || id >= tok.n_vocab())
        bad_request("logit_bias",
                    fmt::format("logit_bias key '{}' is not a token id in [0, {})", k, tok.n_vocab()));
      if (!v.is_number()) bad_request("logit_bias", fmt::format("logit_bias['{}'] must be a number", k));
      s.logit_bias[static_cast<int32_t>(id)] = std::clamp(v.get<float>(), -100.0f, 100.0f);
    }
  }
  for (const char* k : {"max_tokens", "max_completion_tokens"})
    if (has_field(b, k)) {
      const json& v = b[k];
      if (!v.is_number_integer())
        bad_request(k, fmt::format("'{}' must be an integer (got {})", k, v.type_name()));
      const int64_t x = v.is_number_unsigned()
                            ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
                            : v.get<int64_t>();
      if (x < 1) bad_request(k, fmt::format("'{}' must be at least 1 (got {})", k, x));
      r.params.max_tokens = static_cast<int>(std::min<int64_t>(x, 1 << 30));
    }
  if (has_field(b, "stop")) {
    const json& v = b["stop"];
    if (v.is_string()) {
      r.params.stop.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      if (v.size() > kMaxStop)
        bad_request("stop",
                    fmt::format("at most {} stop sequences are allowed (got {})", kMaxStop, v.size()));
      for (const auto& x : v) {
        if (!x.is_string()) bad_request("stop", "'stop' must be a string or an array of strings");
        r.params.stop.push_back(x.get<std::string>());
      }
    } else {
      bad_request("stop", "'stop' must be a string or an array of strings");
    }
    for (const std::string& st : r.params.stop) {
      if (st.empty()) bad_request("stop", "stop sequences must not be empty");
      if (st.size() > kMaxStopBytes)
        bad_request("stop",
                    fmt::format("stop sequences are limited to {} bytes (got {})", kMaxStopBytes, st.size()));
    }
  }
  if (has_field(b, "ignore_eos")) r.params.ignore_eos = get_bool(b, "ignore_eos");
  // ferrum's own: false turns speculative decoding off for this request (when the server has it).
  if (has_field(b, "speculative")) r.params.speculative = get_bool(b, "speculative");
  parse_grammar(b, r);
  if (has_field(b, "stream")) r.stream = get_bool(b, "stream");
  if (has_field(b, "stream_options")) {
    const json& so = b["stream_options"];
    if (!so.is_object()) bad_request("stream_options", "'stream_options' must be an object");
    if (has_field(so, "include_usage")) {
      if (!so["include_usage"].is_boolean())
        bad_request("stream_options.include_usage", "'include_usage' must be a boolean");
      r.include_usage = so["include_usage"].get<bool>();
    }
  }
  try {
    s.validate();
  } catch (const Error& e) {
    bad_request("", e.what());
  }
}

// `reasoning_format` ("auto" or llama.cpp's "deepseek": kept apart; "none": left in the content)
// and `reasoning_budget` (most tokens of reasoning; -1: no limit).
bool parse_reasoning_fields(const json& b, bool on, ParsedRequest& r) {
  if (has_field(b, "reasoning_format")) {
    const json& f = b["reasoning_format"];
    if (!f.is_string() || (f != "none" && f != "auto" && f != "deepseek"))
      bad_request("reasoning_format", "'reasoning_format' must be \"auto\", \"deepseek\" or \"none\"");
    on = f != "none";
  }
  if (has_field(b, "reasoning_budget"))
    r.params.reasoning_budget = static_cast<int>(get_int(b, "reasoning_budget", -1, 1 << 30));
  return on;
}

// Keeps a thinking template's reasoning apart: the grammar of `response_format` or a forced tool
// call, and the budget, apply once the reasoning has ended, so the answer must begin inside it.
void setup_reasoning(const chat::ChatPrompt& prompt, const Tokenizer& tok, chat::PromptReasoning where,
                     ParsedRequest& r) {
  using chat::PromptReasoning;
  if (!prompt.reasoning() || where == PromptReasoning::Closed) return;
  const chat::ReasoningMarkers& m = *prompt.reasoning();
  r.reasoning = m;
  const bool after = (r.grammar && r.grammar_param != "grammar") || r.params.reasoning_budget >= 0;
  if (where == PromptReasoning::None && after) {  // open it as the model itself would
    const auto open = tok.encode(m.start + "\n", /*add_special=*/false, /*parse_special=*/true);
    r.params.prompt.insert(r.params.prompt.end(), open.begin(), open.end());
    where = PromptReasoning::Open;
  }
  r.reasoning_open = where == PromptReasoning::Open;
  if (r.reasoning_open && r.grammar_param != "grammar") r.params.reasoning_end = m.end;
}

// gpt-oss's harmony answers (chat/harmony.h): decoded with their special-token markers and
// rewritten per request into <think> reasoning, text and Hermes-style calls, which the answer
// builders of every API split as they do for other models. A grammar (response_format) and a
// reasoning budget apply from the final channel on; the budget writes the analysis's end and the
// final channel's header. A forced tool call (tool_choice "required" or named) skips the analysis:
// the prompt ends in the call's header (chat::harmony_call_prefill), which the stream reads first,
// and the grammar writes the rest of the call from the start.
void setup_harmony(bool reasoning, const Tokenizer& tok, ParsedRequest& r) {
  const std::string prefill = r.tools.forced() ? chat::harmony_call_prefill(r.tools) : std::string();
  if (!prefill.empty()) {
    const auto ids = tok.encode(prefill, /*add_special=*/false, /*parse_special=*/true);
    r.params.prompt.insert(r.params.prompt.end(), ids.begin(), ids.end());
  }
  r.params.keep_special = true;
  r.params.output_filter = [prefill] {
    auto s = std::make_shared<chat::HarmonyStream>();
    s->push(prefill);  // a header: nothing to release yet
    return OutputFilter{[s](std::string_view t) { return s->push(t); }, [s] { return s->finish(); }};
  };
  r.tool_style = chat::ToolStyle::Hermes;
  if (reasoning) r.reasoning = chat::ReasoningMarkers{};
  r.reasoning_open = false;
  if (prefill.empty() && ((r.grammar && r.grammar_param != "grammar") || r.params.reasoning_budget >= 0)) {
    r.params.reasoning_end = "<|channel|>final<|message|>";
    r.params.reasoning_close = "<|end|><|start|>assistant<|channel|>final<|message|>";
  }
}

// OpenAI's `reasoning_effort` (low, medium, high) as the template variable gpt-oss's template reads
// (unless chat_template_kwargs sets it).
void add_reasoning_effort(const json& b, json& kwargs) {
  if (!has_field(b, "reasoning_effort")) return;
  const json& e = b["reasoning_effort"];
  if (!e.is_string() || (e != "low" && e != "medium" && e != "high"))
    bad_request("reasoning_effort", "'reasoning_effort' must be \"low\", \"medium\" or \"high\"");
  if (kwargs.is_null()) kwargs = json::object();
  if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = e;
}

}  // namespace

ParsedRequest parse_chat_request(const json& b, const Tokenizer& tok, const chat::ChatPrompt& prompt,
                                 const std::vector<std::string>& names, const ChatParseOptions& opt) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  ParsedRequest r;
  check_model(b, names, r);
  if (!b.contains("messages")) bad_request("messages", "'messages' is required");
  parse_common(b, tok, r);
  if (has_field(b, "logprobs")) r.logprobs = get_bool(b, "logprobs");
  int top = 0;
  if (has_field(b, "top_logprobs")) {
    top = static_cast<int>(get_int(b, "top_logprobs", 0, 20));
    if (!r.logprobs) bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  r.params.logprobs = r.logprobs ? top : -1;
  json kwargs = b.contains("chat_template_kwargs") ? b["chat_template_kwargs"] : json();
  if (!kwargs.is_null() && !kwargs.is_object())
    bad_request("chat_template_kwargs", "'chat_template_kwargs' must be an object");
  add_reasoning_effort(b, kwargs);
  const bool reasoning = parse_reasoning_fields(b, opt.reasoning, r);
  chat::PromptReasoning where = chat::PromptReasoning::None;
  try {
    r.tools = chat::parse_tool_request(b);
    r.tool_style = prompt.tool_style();
    const chat::ToolPrompt tp = chat::tool_prompt(r.tool_style, b["messages"], r.tools, prompt.system_role());
    r.params.prompt = prompt.tokens(tp.messages, tp.tools, kwargs, opt.special_tokens_in_messages, &where);
    if (r.tools.forced()) parse_forced_tool_call(r);
  } catch (const chat::ChatError& e) {
    bad_request(e.param, e.what());
  }
  if (r.tool_style == chat::ToolStyle::Harmony)
    setup_harmony(reasoning, tok, r);
  else if (reasoning)
    setup_reasoning(prompt, tok, where, r);
  r.params.at_text_start = true;
  return r;
}

ParsedRequest parse_completion_request(const json& b, const Tokenizer& tok,
                                       const std::vector<std::string>& names) {
  if (!b.is_object()) bad_request("", "the request body must be a JSON object");
  ParsedRequest r;
  check_model(b, names, r);
  if (!b.contains("prompt")) bad_request("prompt", "'prompt' is required");
  parse_common(b, tok, r);
  if (r.params.max_tokens < 0 && !has_field(b, "max_tokens")) r.params.max_tokens = 16;  // OpenAI's default
  if (has_field(b, "logprobs")) {
    r.logprobs = true;
    r.params.logprobs = static_cast<int>(get_int(b, "logprobs", 0, 20));
  }
  if (has_field(b, "echo") && get_bool(b, "echo")) bad_request("echo", "'echo' is not supported");
  if (has_field(b, "suffix")) bad_request("suffix", "'suffix' is not supported");
  json p = b["prompt"];
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = json(p[0]);
  if (p.is_string()) {
    try {
      r.params.prompt = tok.encode(p.get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
    } catch (const Error& e) {
      bad_request("prompt", e.what());
    }
  } else if (p.is_array() && !p.empty() &&
             std::all_of(p.begin(), p.end(), [](const json& x) { return x.is_number_integer(); })) {
    for (const auto& x : p) {
      const int64_t id = x.get<int64_t>();
      if (id < 0 || id >= tok.n_vocab())
        bad_request("prompt",
                    fmt::format("prompt token {} is outside the vocabulary [0, {})", id, tok.n_vocab()));
      r.params.prompt.push_back(static_cast<int32_t>(id));
    }
  } else if (p.is_array() && p.size() > 1) {
    bad_request("prompt", "batched prompts (several strings) are not supported; send one request per prompt");
  } else {
    bad_request("prompt", "'prompt' must be a string or a non-empty array of token ids");
  }
  r.params.at_text_start = false;
  return r;
}

}  // namespace ferrum::server
