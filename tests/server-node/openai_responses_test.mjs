// The official OpenAI Node.js client's Responses API (responses.create, streamed and not, and the
// responses.stream helper) against `ferrum serve`: plain text, a function tool round trip over
// previous_response_id, a json_schema text format; and reasoning kept apart on a thinking template
// (Qwen3's), the think block forced by a grammar: reasoning items in responses, reasoning_content
// in chat completions (message and stream deltas).
// Usage: node openai_responses_test.mjs BASE_URL MODEL_ID
import OpenAI from 'openai';
import { check, finish } from './checks.mjs';

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai_responses_test.mjs BASE_URL MODEL_ID');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', timeout: 120_000, maxRetries: 0 });

// Plain text, greedy: the streamed deltas add up to the non-streamed answer.
const plain = await client.responses.create({ model, input: 'Tell me a story.', instructions: 'Be kind.', max_output_tokens: 16, temperature: 0 });
check(plain.object === 'response' && plain.id.startsWith('resp_'), `response object ${plain.id}`);
check(typeof plain.output_text === 'string' && plain.output_text.length > 0, `output_text ${JSON.stringify(plain.output_text)}`);
check(['completed', 'incomplete'].includes(plain.status), `status ${plain.status}`);
check(plain.usage.input_tokens > 0 && plain.usage.output_tokens > 0, `usage ${JSON.stringify(plain.usage)}`);

const events = await client.responses.create({ model, input: 'Tell me a story.', instructions: 'Be kind.', max_output_tokens: 16, temperature: 0, stream: true });
let deltas = '';
let last = null;
const types = [];
for await (const ev of events) {
  types.push(ev.type);
  if (ev.type === 'response.output_text.delta') deltas += ev.delta;
  last = ev;
}
check(types[0] === 'response.created', `first event ${types[0]}`);
check(deltas === plain.output_text, `streamed deltas equal the answer (${JSON.stringify(deltas)})`);
check(last && ['response.completed', 'response.incomplete'].includes(last.type), `last event ${last?.type}`);
check(last?.response?.output_text === undefined || typeof last.response.output_text === 'string', 'final response');

// The helper's accumulated response (this client version leaves output_text unset on it).
const helper = await client.responses.stream({ model, input: 'Tell me a story.', instructions: 'Be kind.', max_output_tokens: 16, temperature: 0 }).finalResponse();
const helperText = helper.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text).join('');
check(helperText === plain.output_text, `responses.stream finalResponse (${JSON.stringify(helperText)})`);

// A function tool round trip, the second turn continuing the stored response. The template thinks
// before it calls: reasoning_budget (an extension field) ends the reasoning of this tiny model.
const tools = [{
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'] },
  strict: true,
}];
for (const stream of [false, true]) {
  const label = stream ? 'streamed' : 'not streamed';
  const params = { model, input: 'Weather in Paris?', tools, tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 120, seed: 2, reasoning_budget: 4 };
  const first = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
  const call = first.output.find((o) => o.type === 'function_call');
  check(call && call.name === 'get_weather', `${label}: a function_call item (${JSON.stringify(first.output)})`);
  if (!call) continue;
  check(['Paris', 'Oslo'].includes(JSON.parse(call.arguments).city), `${label}: arguments ${call.arguments}`);
  const second = await client.responses.create({
    model, previous_response_id: first.id, tools, max_output_tokens: 12,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ sky: 'sunny' }) }],
  });
  check(second.previous_response_id === first.id, `${label}: previous_response_id echoed`);
  check(second.output.length > 0 && second.usage.input_tokens > first.usage.input_tokens,
        `${label}: second turn continues the conversation (${second.usage.input_tokens} > ${first.usage.input_tokens} input tokens)`);
}

// Structured output through text.format.
const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['n'], additionalProperties: false };
const structured = await client.responses.create({
  model, input: 'Pick a number', max_output_tokens: 120, seed: 1, reasoning_budget: 4, text: { format: { type: 'json_schema', name: 'pick', schema, strict: true } },
});
let parsed = null;
try { parsed = JSON.parse(structured.output_text); } catch { /* checked below */ }
check(parsed && Number.isInteger(parsed.n), `json_schema output ${structured.output_text}`);

// Reasoning on the thinking template, the think block forced by a grammar (an extension field).
const grammar = 'root ::= "<think>\\nOnce the cat\\n</think>\\n\\n" "Lily was happy."';
const r = await client.responses.create({ model, input: 'Hi', max_output_tokens: 60, grammar });
check(r.output[0]?.type === 'reasoning' && r.output[0].content[0].text === 'Once the cat', `reasoning item ${JSON.stringify(r.output[0])}`);
check(r.output_text === 'Lily was happy.', `answer after the reasoning ${JSON.stringify(r.output_text)}`);
const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 60, grammar });
check(chat.choices[0].message.reasoning_content === 'Once the cat', `chat reasoning_content ${JSON.stringify(chat.choices[0].message)}`);
check(chat.choices[0].message.content === 'Lily was happy.', 'chat content without the think block');
const chunks = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 60, grammar, stream: true });
let reasoning = '';
let content = '';
for await (const chunk of chunks) {
  const d = chunk.choices[0]?.delta ?? {};
  reasoning += d.reasoning_content ?? '';
  content += d.content ?? '';
}
check(reasoning === 'Once the cat' && content === 'Lily was happy.', `streamed reasoning_content / content ${JSON.stringify([reasoning, content])}`);

// A bad input is a 400 naming the field.
try {
  await client.responses.create({ model, input: [{ type: 'item_reference', id: 'x' }] });
  check(false, 'item_reference is rejected');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === 'input[0].type', `400 naming input[0].type (${e.message})`);
}

finish();
