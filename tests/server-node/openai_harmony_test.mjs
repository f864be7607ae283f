// The official OpenAI Node.js client in a harmony conversation (gpt-oss's template served in place of
// stories260K's): the model's analysis channel must come back as reasoning_content, a commentary
// message to functions.w as a tool call, the final channel as content, non-streamed and streamed;
// the second turn sends the call, its reasoning and the tool's result back. The tiny model's
// answers are forced whole by llama.cpp's `grammar` extension (the harmony markers are text in its
// vocabulary).
// Usage: node openai_harmony_test.mjs BASE_URL MODEL_ID
import OpenAI from 'openai';
import { check, finish } from './checks.mjs';

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai_harmony_test.mjs BASE_URL MODEL_ID');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', timeout: 120_000, maxRetries: 0 });

const tools = [{
  type: 'function',
  function: { name: 'w', description: 'Weather', parameters: { type: 'object', properties: { c: { type: 'string' } } } },
}];
const lit = (s) => JSON.stringify(s);  // a GBNF string literal (JSON's escapes are GBNF's)
const callGrammar = `root ::= ${lit('<|channel|>analysis<|message|>Hm<|end|><|start|>assistant<|channel|>commentary to=functions.w <|constrain|>json<|message|>{"c": "P"}')}`;
const finalGrammar = `root ::= ${lit('<|channel|>final<|message|>Sunny.')}`;
// stories260K's context is 512 tokens: a short model identity keeps gpt-oss's system message small.
const base = { model, tools, chat_template_kwargs: { model_identity: 'M' }, reasoning_effort: 'low' };

async function streamed(params) {
  const out = { reasoning: '', content: '', calls: [], finish: null };
  const stream = await client.chat.completions.create({ ...params, stream: true });
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    out.reasoning += c.delta.reasoning_content ?? '';
    out.content += c.delta.content ?? '';
    for (const t of c.delta.tool_calls ?? []) {
      if (!out.calls[t.index]) out.calls[t.index] = { id: t.id, name: '', arguments: '' };
      out.calls[t.index].name += t.function?.name ?? '';
      out.calls[t.index].arguments += t.function?.arguments ?? '';
    }
    if (c.finish_reason) out.finish = c.finish_reason;
  }
  return out;
}

const user = { role: 'user', content: 'Weather?' };
const first = await client.chat.completions.create({ ...base, messages: [user], grammar: callGrammar });
const m = first.choices[0].message;
check(first.choices[0].finish_reason === 'tool_calls', `finish_reason ${first.choices[0].finish_reason}`);
check(m.reasoning_content === 'Hm', `reasoning_content ${JSON.stringify(m.reasoning_content)}`);
check(!m.content, `no content (got ${JSON.stringify(m.content)})`);
check(m.tool_calls?.length === 1 && m.tool_calls[0].function.name === 'w', `one call to w: ${JSON.stringify(m.tool_calls)}`);
check(JSON.stringify(JSON.parse(m.tool_calls?.[0]?.function.arguments ?? 'null')) === '{"c":"P"}',
  `arguments ${m.tool_calls?.[0]?.function.arguments}`);

const s = await streamed({ ...base, messages: [user], grammar: callGrammar });
check(s.reasoning === 'Hm', `streamed reasoning ${JSON.stringify(s.reasoning)}`);
check(s.content === '', `streamed content ${JSON.stringify(s.content)}`);
check(s.calls.length === 1 && s.calls[0].name === 'w' && JSON.parse(s.calls[0].arguments).c === 'P',
  `streamed call ${JSON.stringify(s.calls)}`);
check(s.finish === 'tool_calls', `streamed finish_reason ${s.finish}`);

// Second turn: the call, its reasoning (as the client got it) and the result go back.
const messages = [user, { role: 'assistant', content: null, reasoning_content: m.reasoning_content, tool_calls: m.tool_calls },
  { role: 'tool', tool_call_id: m.tool_calls?.[0]?.id ?? 'x', content: 'sunny' }];
// (Without `tools` this time: with them the prompt would not fit the tiny model's 512 tokens.)
const { tools: _, ...noTools } = base;
const second = await client.chat.completions.create({ ...noTools, messages, grammar: finalGrammar });
check(second.choices[0].message.content === 'Sunny.', `final content ${JSON.stringify(second.choices[0].message.content)}`);
check(!second.choices[0].message.reasoning_content, 'no reasoning in the final answer');
check(second.choices[0].finish_reason === 'stop', `final finish_reason ${second.choices[0].finish_reason}`);
const s2 = await streamed({ ...noTools, messages, grammar: finalGrammar });
check(s2.content === 'Sunny.' && s2.reasoning === '', `streamed final ${JSON.stringify(s2)}`);
finish();
