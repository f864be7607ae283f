#!/usr/bin/env python3
"""Regenerates harmony_renders.json: conversations rendered with gpt-oss's chat template
(templates/openai-gpt-oss-120b.jinja, the harmony format) by Python Jinja2 set up as Hugging Face
transformers does (gen_jinja_cases.py's environment), with strftime_now pinned to 2025-03-14 as the
other fixtures' clock. Cases: system and user turns, reasoning effort, tools with a call and its
result, an earlier answer's reasoning dropped, and the template's own exceptions. Dev-time only;
tests read the JSON.
Usage: python3 gen_harmony_renders.py > harmony_renders.json"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_jinja_cases  # noqa: E402  (the HF-configured Jinja2 environment)

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "openai-gpt-oss-120b.jinja"
CLOCK = datetime.datetime(2025, 3, 14, 9, 26, 53)

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time",
                                      "parameters": {"type": "object", "properties": {}}}},
]
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

CASES = [
    ("user_only", [{"role": "user", "content": "Hi"}], {}),
    ("system_user", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], {}),
    ("developer_effort_high", [{"role": "developer", "content": "Answer in French."},
                               {"role": "user", "content": "Hi"}], {"reasoning_effort": "high"}),
    ("identity", [{"role": "user", "content": "Who are you?"}], {"model_identity": "You are ferrum's model."}),
    ("multi_turn_drops_reasoning", [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "thinking": "Simple sum."},
        {"role": "user", "content": "And 3+3?"}], {}),
    ("tools_listed", [{"role": "user", "content": "Weather in Paris?"}], {"tools": TOOLS}),
    ("tool_call_and_result", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "thinking": "I should call get_weather.", "tool_calls": [CALL]},
        {"role": "tool", "content": "{\"temp\": 21}"}], {"tools": TOOLS}),
    ("tool_call_then_answer", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Calling the tool.", "tool_calls": [CALL]},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "Thanks"}], {"tools": TOOLS}),
    ("no_generation_prompt", [{"role": "user", "content": "Hi"},
                              {"role": "assistant", "content": "Hello!", "thinking": "Greet back."}],
     {"add_generation_prompt": False}),
    ("error_channel_in_content", [{"role": "user", "content": "Hi"},
                                  {"role": "assistant", "content": "<|channel|>final<|message|>x"},
                                  {"role": "user", "content": "?"}], {}),
    ("error_tool_without_call", [{"role": "user", "content": "Hi"}, {"role": "tool", "content": "x"}], {}),
]


def main():
    env = gen_jinja_cases.env
    env.globals["strftime_now"] = lambda fmt: CLOCK.strftime(fmt)
    tpl = env.from_string(open(os.path.join(HERE, "templates", NAME), encoding="utf-8").read())
    out = []
    for case, messages, kwargs in CASES:
        variables = {"messages": messages, "add_generation_prompt": True, "bos_token": "<|startoftext|>",
                     "eos_token": "<|return|>"}
        variables.update(kwargs)
        entry = {"case": case, "messages": messages, "kwargs": kwargs}
        try:
            entry["rendered"] = tpl.render(**variables)
        except Exception as e:  # the template's raise_exception
            entry["error"] = {"type": type(e).__name__, "message": str(e)}
        out.append(entry)
    json.dump({"template": NAME, "renders": out}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
