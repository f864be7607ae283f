// The official Anthropic TypeScript SDK (@anthropic-ai/sdk) against a running `ferrum serve`:
// messages.create streamed and not (same greedy text), stop reasons, count_tokens, and a tool-use
// round trip (a forced call, its tool_result sent back).
// Usage: node anthropic_client_test.mjs BASE_URL MODEL_ID [API_KEY]
// Exits 0 when every check passes; prints what failed otherwise.
import Anthropic from '@anthropic-ai/sdk';
import { check, finish } from './checks.mjs';

const [baseURL, model, apiKey = 'none'] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node anthropic_client_test.mjs BASE_URL MODEL_ID [API_KEY]');
  process.exit(2);
}
const client = new Anthropic({ baseURL, apiKey, timeout: 120_000, maxRetries: 0 });
const textOf = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

// Not streamed.
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const msg = await client.messages.create({ model, messages, max_tokens: 24, temperature: 0, system: 'Be kind.' });
check(msg.type === 'message' && msg.role === 'assistant', 'a message from the assistant');
check(typeof textOf(msg) === 'string' && textOf(msg).length > 0, 'message text');
check(msg.stop_reason === 'max_tokens' || msg.stop_reason === 'end_turn', `stop_reason ${msg.stop_reason}`);
check(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0, 'usage');

// Streamed, through the SDK's event parser: the same text, the same stop reason.
const stream = client.messages.stream({ model, messages, max_tokens: 24, temperature: 0, system: 'Be kind.' });
let streamed = '';
stream.on('text', (t) => { streamed += t; });
const final = await stream.finalMessage();
check(streamed === textOf(msg), `streamed text equals non-streamed (${JSON.stringify(streamed)} vs ${JSON.stringify(textOf(msg))})`);
check(textOf(final) === textOf(msg), 'finalMessage text');
check(final.stop_reason === msg.stop_reason, 'streamed stop_reason');
check(final.usage.output_tokens === msg.usage.output_tokens, 'streamed output tokens');

// A stop sequence.
const cut = textOf(msg).slice(4, 7);
const stopped = await client.messages.create({ model, messages, max_tokens: 24, temperature: 0, system: 'Be kind.', stop_sequences: [cut] });
check(stopped.stop_reason === 'stop_sequence' && stopped.stop_sequence === cut, `stop_sequence ${JSON.stringify(cut)}`);

// count_tokens: the prompt of the message above.
const counted = await client.messages.countTokens({ model, messages, system: 'Be kind.' });
check(counted.input_tokens === msg.usage.input_tokens, `count_tokens ${counted.input_tokens}`);

// Tool use: a forced call, then its result sent back.
const tools = [{
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'] },
}];
const question = [{ role: 'user', content: 'What is the weather in Paris?' }];
const call = await client.messages.create({
  model, messages: question, tools, max_tokens: 200, temperature: 0,
  tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
});
const use = call.content.find((b) => b.type === 'tool_use');
check(call.stop_reason === 'tool_use', `tool stop_reason ${call.stop_reason}`);
check(use && use.name === 'get_weather' && ['Paris', 'Oslo'].includes(use.input.city), `tool_use ${JSON.stringify(use)}`);
if (use) {
  const answer = await client.messages.create({
    model, tools, max_tokens: 8, temperature: 0,
    messages: [...question, { role: 'assistant', content: call.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 21 C' }] }],
  });
  check(answer.type === 'message' && answer.usage.input_tokens > call.usage.input_tokens, 'tool_result turn answered');
}

// An error in Anthropic's shape, raised by the SDK as a typed error.
try {
  await client.messages.create({ model, messages: [], max_tokens: 4 });
  check(false, 'empty messages refused');
} catch (e) {
  check(e instanceof Anthropic.BadRequestError && e.error?.error?.type === 'invalid_request_error', `BadRequestError (${e})`);
}

finish();
