// The official OpenAI Node.js client running a two-turn tool loop against `ferrum serve`: the
// model must call a tool (tool_choice "required", then a named function), the script answers with
// a `tool` message, the model answers; non-streamed, and streamed through the client's own stream
// accumulator (beta.chat.completions.stream), which merges delta.tool_calls.
// Usage: node openai_tools_test.mjs BASE_URL MODEL_ID [API_KEY]
// Exits 0 when every check passes; prints what failed otherwise.
import OpenAI from 'openai';
import { check, finish } from './checks.mjs';

const [baseURL, model, apiKey = 'none'] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai_tools_test.mjs BASE_URL MODEL_ID [API_KEY]');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, timeout: 120_000, maxRetries: 0 });

// Bounded arguments (an enum and a small integer), so a tiny model finishes its call in time.
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, days: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['city'],
    },
  },
}, {
  type: 'function',
  function: { name: 'get_time', description: 'Local time', parameters: { type: 'object', properties: {} } },
}];

async function complete(params, stream) {
  if (!stream) return client.chat.completions.create(params);
  return client.beta.chat.completions.stream(params).finalChatCompletion();
}

async function toolLoop(toolChoice, stream) {
  const label = `${JSON.stringify(toolChoice)}${stream ? ' streamed' : ''}`;
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const first = await complete({
    model, messages, tools, tool_choice: toolChoice, parallel_tool_calls: false, max_tokens: 120, seed: 7,
  }, stream);
  const choice = first.choices[0];
  check(choice.finish_reason === 'tool_calls', `${label}: finish_reason ${choice.finish_reason}`);
  const calls = choice.message.tool_calls ?? [];
  check(calls.length === 1, `${label}: one tool call (got ${JSON.stringify(calls)})`);
  if (calls.length !== 1) return;
  const call = calls[0];
  const wanted = typeof toolChoice === 'object' ? [toolChoice.function.name] : ['get_weather', 'get_time'];
  check(call.type === 'function' && typeof call.id === 'string' && call.id.length > 0, `${label}: call id and type`);
  check(wanted.includes(call.function.name), `${label}: function ${call.function.name}`);
  let args = null;
  try {
    args = JSON.parse(call.function.arguments);
  } catch (e) {
    check(false, `${label}: arguments are JSON (${call.function.arguments})`);
    return;
  }
  if (call.function.name === 'get_weather') {
    check(['Paris', 'Oslo'].includes(args.city), `${label}: city ${JSON.stringify(args)}`);
    check(Object.keys(args).every((k) => k === 'city' || (k === 'days' && Number.isInteger(args.days))),
          `${label}: only schema keys ${JSON.stringify(args)}`);
  } else {
    check(Object.keys(args).length === 0, `${label}: get_time takes no arguments ${JSON.stringify(args)}`);
  }
  messages.push(choice.message);
  messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature_c: 18, sky: 'sunny' }) });
  const second = await complete({ model, messages, tools, max_tokens: 16, seed: 7 }, stream);
  const answer = second.choices[0];
  check(answer.message.role === 'assistant', `${label}: second turn is an assistant message`);
  check(['stop', 'length', 'tool_calls'].includes(answer.finish_reason), `${label}: second finish_reason ${answer.finish_reason}`);
  check(typeof answer.message.content === 'string' || (answer.message.tool_calls ?? []).length > 0,
        `${label}: second turn has content or calls`);
}

for (const stream of [false, true]) {
  await toolLoop('required', stream);
  await toolLoop({ type: 'function', function: { name: 'get_weather' } }, stream);
}

// A bad tool_choice is a 400 naming the field.
try {
  await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: { type: 'function', function: { name: 'nope' } },
  });
  check(false, 'unknown tool_choice function is rejected');
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.function.name', `400 for an unknown function (${e.message})`);
}

finish();
