// The official OpenAI Node.js client against a running `ferrum serve`.
// Usage: node openai_client_test.mjs BASE_URL MODEL_ID [API_KEY]
// Exits 0 when every check passes; prints what failed otherwise.
import OpenAI from 'openai';
import { check, finish as report } from './checks.mjs';

const [baseURL, model, apiKey = 'none'] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai_client_test.mjs BASE_URL MODEL_ID [API_KEY]');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, timeout: 120_000, maxRetries: 0 });

// Model listing.
const models = await client.models.list();
const ids = models.data.map((m) => m.id);
check(ids.includes(model), `models.list contains ${model} (got ${JSON.stringify(ids)})`);

// Chat, non-streaming.
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
const msg = chat.choices[0].message;
check(chat.object === 'chat.completion', 'chat object');
check(msg.role === 'assistant' && typeof msg.content === 'string', 'chat message is an assistant string');
check(['stop', 'length'].includes(chat.choices[0].finish_reason), `chat finish_reason ${chat.choices[0].finish_reason}`);
check(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0 &&
      chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens, 'chat usage');

// Chat, streaming: same greedy text as the non-streamed answer.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let text = '', finish = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta?.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
check(chunks >= 2, `chat stream has ${chunks} chunks`);
check(text === msg.content, `streamed chat text equals non-streamed (${JSON.stringify(text)} vs ${JSON.stringify(msg.content)})`);
check(finish === chat.choices[0].finish_reason, 'streamed finish_reason');
check(usage && usage.completion_tokens === chat.usage.completion_tokens, 'stream usage chunk');

// Completions, non-streaming and streaming.
const comp = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 20, temperature: 0 });
check(comp.object === 'text_completion' && typeof comp.choices[0].text === 'string',
      'completion text');
check(comp.usage.completion_tokens > 0, 'completion usage');
const cstream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 20, temperature: 0, stream: true });
let ctext = '';
for await (const chunk of cstream) ctext += chunk.choices[0]?.text ?? '';
check(ctext === comp.choices[0].text, 'streamed completion equals non-streamed');

// Errors come back as APIError with the status and message.
try {
  await client.chat.completions.create({ model, messages, n: 2 });
  check(false, 'n=2 is rejected');
} catch (e) {
  check(e instanceof OpenAI.APIError && e.status === 400 && /n = 1/.test(e.message), `n=2 -> 400 (${e.message})`);
}
try {
  await client.chat.completions.create({ model: 'no-such-model', messages });
  check(false, 'unknown model is rejected');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError, `unknown model -> 404 (${e.message})`);
}

report();
