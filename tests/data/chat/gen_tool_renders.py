#!/usr/bin/env python3
"""Regenerates tool_renders.json: two-turn tool conversations (tools, an assistant tool call, a
`tool` result) rendered with real chat templates by Python Jinja2 set up as Hugging Face
transformers does (gen_jinja_cases.py's environment). The OpenAI-form messages (arguments as a JSON
string) are converted here, independently of ferrum: arguments parsed into objects (what HF
templates expect), and for a template without tool support ferrum's documented default format
(src/chat/tool_prompt.h) written out by hand. Dev-time only; tests read the JSON.
Usage: python3 gen_tool_renders.py > tool_renders.json"""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_jinja_cases  # noqa: E402  (the HF-configured Jinja2 environment)

HERE = os.path.dirname(os.path.abspath(__file__))

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                        "unit": {"type": "string", "enum": ["c", "f"]}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time",
                                      "parameters": {"type": "object", "properties": {}}}},
]

ARGS = '{"city": "Paris", "unit": "c"}'
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "abcDEF123", "type": "function",
                     "function": {"name": "get_weather", "arguments": ARGS}}]},
    {"role": "tool", "tool_call_id": "abcDEF123", "content": "18 C, sunny"},
]


def sorted_keys(x):
    """ferrum parses request bodies into JSON objects with sorted keys, so templates see the keys of
    messages, arguments and parameter schemas in that order (Python keeps the client's order)..."""
    if isinstance(x, dict):
        return {k: sorted_keys(x[k]) for k in sorted(x)}
    if isinstance(x, list):
        return [sorted_keys(v) for v in x]
    return x


def put_first(d, first):
    out = {k: d[k] for k in first if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def tool_order(tools):
    """...except tools and tool calls, whose keys ferrum puts back in OpenAI's documented order."""
    out = []
    for t in tools:
        t = put_first(t, ["type", "function"])
        t["function"] = put_first(t["function"], ["name", "description", "parameters"])
        out.append(t)
    return out


def call_order(calls):
    out = []
    for c in calls:
        c = put_first(c, ["id", "type", "function"])
        c["function"] = put_first(c["function"], ["name", "arguments"])
        out.append(c)
    return out


def for_template(messages):
    out = sorted_keys(copy.deepcopy(messages))
    for m in out:
        if m.get("content") is None:
            m["content"] = ""  # ferrum's rule for a message with only tool calls (chat_prompt.cpp)
        for c in m.get("tool_calls") or []:
            c["function"]["arguments"] = sorted_keys(json.loads(c["function"]["arguments"]))
        if m.get("tool_calls"):
            m["tool_calls"] = call_order(m["tool_calls"])
    return out


def default_format(messages, tools, system_role):
    text = "# Tools\n\nYou may call the following functions. Each is described by a JSON object:\n"
    for t in tools:
        text += json.dumps(t, separators=(",", ":"), ensure_ascii=False, sort_keys=True) + "\n"
    text += ("\nTo call functions, answer with one block per call and nothing else:\n<tool_call>\n"
             "{\"name\": <function name>, \"arguments\": <the arguments as a JSON object>}\n</tool_call>")
    out = []
    for m in messages:
        m = dict(m)
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = "\n".join(
                "<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>" % (
                    json.dumps(c["function"]["name"]),
                    json.dumps(json.loads(c["function"]["arguments"]), separators=(",", ":"), sort_keys=True))
                for c in m["tool_calls"])
            m = {"role": "assistant", "content": (m["content"] + "\n" + calls) if m.get("content") else calls}
        elif m["role"] == "tool":
            m = {"role": "user", "content": "<tool_response>\n" + m["content"] + "\n</tool_response>"}
        out.append(m)
    if not system_role:  # the tools go in front of the first user message
        first_user = next(m for m in out if m["role"] == "user")
        first_user["content"] = text + "\n\n" + first_user["content"]
    elif out[0]["role"] in ("system", "developer"):
        out[0]["content"] = out[0]["content"] + "\n\n" + text
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


def phi4_format(messages, tools):
    """Phi-4-mini's convention (its model card): the tools as a JSON list of {name, description,
    parameters} in the system message's `tools`, earlier calls written as
    <|tool_call|>[{"name", "arguments"}]<|/tool_call|> in the assistant's content."""
    out = []
    for m in sorted_keys(copy.deepcopy(messages)):
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [{"name": c["function"]["name"], "arguments": sorted_keys(json.loads(c["function"]["arguments"]))}
                     for c in m["tool_calls"]]
            m = {"role": "assistant",
                 "content": (m.get("content") or "") + "<|tool_call|>" +
                 json.dumps(calls, separators=(",", ":"), ensure_ascii=False) + "<|/tool_call|>"}
        out.append(m)
    listed = []
    for t in tools:
        f = t["function"]
        o = {"name": f["name"]}
        for k in ("description", "parameters"):
            if k in f:
                o[k] = sorted_keys(f[k])
        listed.append(o)
    if out[0]["role"] != "system":
        out.insert(0, {"role": "system", "content": "You are a helpful assistant with some tools."})
    out[0]["tools"] = json.dumps(listed, separators=(",", ":"), ensure_ascii=False)
    return out


# (template file, style, bos, eos, extra variables, whether the template writes system messages)
TEMPLATES = [
    ("Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", "", "<|im_end|>", {}, True),
    ("Qwen-Qwen3-0.6B.jinja", "hermes", "", "<|im_end|>", {}, True),
    ("meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3", "<|begin_of_text|>", "<|eot_id|>",
     {"date_string": "14 Mar 2025"}, True),
    ("meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3", "<|begin_of_text|>", "<|eot_id|>",
     {"date_string": "14 Mar 2025"}, True),
    ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral", "<s>", "</s>", {}, True),
    ("llama3-tokenizer_config.jinja", "default", "<|begin_of_text|>", "<|eot_id|>", {}, True),
    ("phi-3.jinja", "default", "<s>", "<|endoftext|>", {}, False),
    ("microsoft-Phi-3.5-mini-instruct.jinja", "default", "<s>", "<|endoftext|>", {}, True),
    ("google-gemma-2-2b-it.jinja", "default", "<bos>", "<eos>", {}, False),
    ("google-gemma-3-1b-it.jinja", "default", "<bos>", "<eos>", {}, True),
    ("microsoft-Phi-4-mini-instruct.jinja", "phi4", "<|endoftext|>", "<|endoftext|>", {}, True),
]


def main():
    cases = []
    for name, style, bos, eos, extra, system_role in TEMPLATES:
        src = open(os.path.join(HERE, "templates", name), encoding="utf-8").read()
        tpl = gen_jinja_cases.env.from_string(src)
        # Mistral Nemo's template has no system turn of its own before the last user message; Gemma 2's
        # raises on a system message (Gemma 3's puts it in front of the first user turn).
        conv = CONVERSATION[1:] if style == "mistral" or "gemma-2" in name else CONVERSATION
        if style == "default":
            msgs, tools = default_format(conv, TOOLS, system_role), None
        elif style == "phi4":
            msgs, tools = phi4_format(conv, TOOLS), None
        else:
            msgs, tools = for_template(conv), tool_order(sorted_keys(TOOLS))
        variables = {"messages": msgs, "tools": tools, "add_generation_prompt": True,
                     "bos_token": bos, "eos_token": eos}
        variables.update(extra)
        cases.append({"template": name, "style": style, "bos": bos, "eos": eos, "extra": extra,
                      "system_role": system_role,
                      "tools": TOOLS, "messages": conv, "expected": tpl.render(**variables)})
    json.dump(cases, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
