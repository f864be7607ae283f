// Renders every case of tests/data/chat/renders.json (Python Jinja2 + HF conventions) and compares
// byte for byte; cases where Python raised must throw the same exception type and message.
#include "template/chat_template.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "test_util.h"

namespace {

using ferrum::ChatTemplate;
using ferrum::ChatTemplateOptions;
using json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The clock the fixtures were rendered with: 2025-03-14T09:26:53.
std::string pinned_strftime(const std::string& fmt) {
  std::tm t{};
  t.tm_year = 2025 - 1900;
  t.tm_mon = 2;
  t.tm_mday = 14;
  t.tm_hour = 9;
  t.tm_min = 26;
  t.tm_sec = 53;
  t.tm_wday = 5;  // Friday
  t.tm_yday = 72;
  return ferrum::strftime_at(t, fmt);
}

ChatTemplateOptions options_for(const json& kwargs) {
  ChatTemplateOptions o;
  o.strftime_now = pinned_strftime;
  for (auto& [k, v] : kwargs.items()) {
    if (k == "add_generation_prompt") {
      o.add_generation_prompt = v.get<bool>();
    } else if (k == "tools") {
      o.tools = v;
    } else if (k == "special_tokens") {
      for (auto& [tk, tv] : v.items()) {
        if (tk == "bos_token")
          o.bos_token = tv.get<std::string>();
        else if (tk == "eos_token")
          o.eos_token = tv.get<std::string>();
        else
          o.extra[tk] = tv;
      }
    } else {
      o.extra[k] = v;
    }
  }
  return o;
}

const json& renders() {
  static const json j = json::parse(read_file(ferrum::test::unxz("chat/renders.json")));
  return j;
}

TEST(ChatTemplateFixtures, AllRendersMatchPythonJinja) {
  const json& all = renders();
  std::map<std::string, std::unique_ptr<ChatTemplate>> templates;
  int ok = 0, raised_ok = 0, total = 0;
  for (auto& r : all["renders"]) {
    ++total;
    std::string file = r["template_file"].get<std::string>();
    std::string label = r["template"].get<std::string>() + " / " + r["case"].get<std::string>();
    SCOPED_TRACE(label);
    auto& tpl = templates[file];
    if (!tpl)
      tpl =
          std::make_unique<ChatTemplate>(read_file(ferrum::test::data_path("chat/templates/" + file)), file);
    ChatTemplateOptions opt = options_for(r["kwargs"]);
    if (r.contains("error")) {
      try {
        std::string out = tpl->render(r["messages"], opt);
        ADD_FAILURE() << "expected " << r["error"]["type"] << ", got output:\n" << out;
      } catch (const ferrum::jinja::TemplateError& e) {
        EXPECT_EQ(e.type(), r["error"]["type"].get<std::string>()) << e.what();
        EXPECT_EQ(e.message(), r["error"]["message"].get<std::string>()) << e.what();
        if (e.type() == r["error"]["type"].get<std::string>() &&
            e.message() == r["error"]["message"].get<std::string>())
          ++raised_ok;
      }
      continue;
    }
    try {
      std::string out = tpl->render(r["messages"], opt);
      std::string want = r["rendered"].get<std::string>();
      EXPECT_EQ(out, want);
      if (out == want) ++ok;
    } catch (const ferrum::Error& e) {
      ADD_FAILURE() << "render threw: " << e.what();
    }
  }
  EXPECT_EQ(total, 171);
  std::printf("chat fixtures: %d/%d renders byte-exact, %d expected exceptions matched\n", ok, total,
              raised_ok);
  EXPECT_EQ(ok + raised_ok, total) << ok << " renders and " << raised_ok << " errors matched";
}

TEST(ChatTemplateFixtures, TemplatesAreRealHfTemplates) {
  // Guards against the fixture set shrinking silently.
  const json& all = renders();
  EXPECT_EQ(all["templates"].size(), 9u);
  int errors = 0;
  for (auto& r : all["renders"]) errors += r.contains("error");
  EXPECT_EQ(errors, 5);
}

// gpt-oss's template (the harmony format: channels, reasoning effort, TypeScript-like tool
// declarations, tool calls and results; recursive macros, namespaces, slices of the loop's list)
// against Python Jinja2's renders of tests/data/chat/gen_harmony_renders.py, clock pinned.
TEST(ChatTemplateFixtures, GptOssHarmonyRendersMatchPythonJinja) {
  const json all = json::parse(read_file(ferrum::test::data_path("chat/harmony_renders.json")));
  const std::string file = all["template"].get<std::string>();
  ChatTemplate tpl(read_file(ferrum::test::data_path("chat/templates/" + file)), file);
  int checked = 0;
  for (const json& r : all["renders"]) {
    SCOPED_TRACE(r["case"].get<std::string>());
    ChatTemplateOptions opt = options_for(r["kwargs"]);
    if (!r["kwargs"].contains("add_generation_prompt")) opt.add_generation_prompt = true;
    opt.bos_token = "<|startoftext|>";
    opt.eos_token = "<|return|>";
    if (r.contains("error")) {
      try {
        const std::string out = tpl.render(r["messages"], opt);
        ADD_FAILURE() << "expected " << r["error"]["type"] << ", got output:\n" << out;
      } catch (const ferrum::jinja::TemplateError& e) {
        EXPECT_EQ(e.type(), r["error"]["type"].get<std::string>()) << e.what();
        EXPECT_EQ(e.message(), r["error"]["message"].get<std::string>()) << e.what();
      }
    } else {
      EXPECT_EQ(tpl.render(r["messages"], opt), r["rendered"].get<std::string>());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 11);
}

TEST(ChatTemplate, DefaultClockAndKwargs) {
  ChatTemplate t(
      "{{ bos_token }}{{ strftime_now('%Y') | length }}{{ messages[0].content }}{{ enable_thinking }}", "t");
  ChatTemplateOptions o;
  o.bos_token = "<s>";
  o.extra["enable_thinking"] = false;
  EXPECT_EQ(t.render(json::parse(R"([{"role":"user","content":"hi"}])"), o), "<s>4hiFalse");
}

TEST(ChatTemplate, DeeplyNestedDataIsAnErrorNotAStackOverflow) {
  ChatTemplate t("{{ messages | tojson }}", "t");
  std::string deep = "[{\"role\":\"user\",\"content\":\"hi\",\"x\":" + std::string(100000, '[') +
                     std::string(100000, ']') + "}]";
  const json msgs = json::parse(deep);  // nlohmann's parser does not recurse
  try {
    t.render(msgs, {});
    FAIL() << "expected an exception";
  } catch (const ferrum::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 256"), std::string::npos) << e.what();
  }
  deep =
      "[{\"role\":\"user\",\"content\":\"hi\",\"x\":" + std::string(200, '[') + std::string(200, ']') + "}]";
  EXPECT_NE(t.render(json::parse(deep), {}).find("[[[[["), std::string::npos);
}

TEST(ChatTemplate, RaiseExceptionKeepsMessage) {
  ChatTemplate t("{% if messages | length == 0 %}{{ raise_exception('no messages!') }}{% endif %}", "t");
  try {
    t.render(json::array(), {});
    FAIL() << "expected an exception";
  } catch (const ferrum::jinja::TemplateError& e) {
    EXPECT_EQ(e.type(), "TemplateError");
    EXPECT_EQ(e.message(), "no messages!");
    EXPECT_NE(std::string(e.what()).find("t:1"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, SyntaxErrorNamesLine) {
  try {
    ChatTemplate t("line one\n{% if x %}\n{{ 1 + }}\n{% endif %}", "bad.jinja");
    FAIL() << "expected a syntax error";
  } catch (const ferrum::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jinja:3:"), std::string::npos) << e.what();
  }
}

}  // namespace
