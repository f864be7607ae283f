#include "template/chat_template.h"

#include <vector>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"

namespace ferrum {

std::string strftime_at(const std::tm& t, const std::string& fmt) {
  if (fmt.empty()) return "";
  // strftime returns 0 both for "buffer too small" and for an empty result: grow a few times.
  for (size_t cap = 256; cap <= (size_t{1} << 20); cap *= 4) {
    std::vector<char> buf(cap);
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &t);
    if (n > 0) return std::string(buf.data(), n);
  }
  return "";
}

ChatTemplate::ChatTemplate(std::string source, std::string name)
    : source_(std::move(source)), tpl_(source_, std::move(name)) {}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const ChatTemplateOptions& opt) const {
  using jinja::Value;
  if (!messages.is_array())
    throw jinja::TemplateError("TypeError", "messages must be a JSON array", tpl_.name());
  Value vars = Value::dict();
  auto& d = vars.dict_obj();
  auto data = [&](const nlohmann::ordered_json& j) {
    try {
      return Value::from_json(j);
    } catch (const jinja::Raise& r) {
      throw jinja::TemplateError(r.type, r.message, tpl_.name());
    }
  };
  d.set("messages", data(messages));
  d.set("tools", data(opt.tools));
  d.set("documents", Value(nullptr));
  d.set("add_generation_prompt", Value(opt.add_generation_prompt));
  d.set("bos_token", Value(opt.bos_token));
  d.set("eos_token", Value(opt.eos_token));
  d.set("raise_exception", Value::function("raise_exception", [](jinja::CallArgs& a) -> Value {
          jinja::ArgBinder b(a, "raise_exception", {"message"});
          jinja::raise("TemplateError", b.get(0) ? b.get(0)->to_str() : "");
        }));
  auto clock = opt.strftime_now;
  d.set("strftime_now", Value::function("strftime_now", [clock](jinja::CallArgs& a) -> Value {
          jinja::ArgBinder b(a, "strftime_now", {"format"});
          if (!b.get(0) || !b.get(0)->is_string())
            jinja::raise_type_error("strftime_now() needs a format string");
          const std::string& fmt = b.get(0)->str();
          if (clock) return Value(clock(fmt));
          std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          return Value(strftime_at(tm, fmt));
        }));
  if (!opt.extra.is_null()) {
    if (!opt.extra.is_object())
      throw jinja::TemplateError("TypeError", "extra template variables must be a JSON object", tpl_.name());
    for (auto& [k, v] : opt.extra.items()) d.set(k, data(v));
  }
  return tpl_.render(vars);
}

}  // namespace ferrum
