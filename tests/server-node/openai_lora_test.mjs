// The official OpenAI Node.js client driving two LoRA adapters of a running `ferrum serve
// --lora a=... --lora b=...` at once (vLLM's convention: the adapter is the request's model).
// Usage: node openai_lora_test.mjs BASE_URL BASE_MODEL_ID
// Exits 0 when every check passes; prints what failed otherwise.
import OpenAI from 'openai';
import { check, finish } from './checks.mjs';

const [baseURL, base] = process.argv.slice(2);
if (!baseURL || !base) {
  console.error('usage: node openai_lora_test.mjs BASE_URL BASE_MODEL_ID');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', timeout: 120_000, maxRetries: 0 });

const models = (await client.models.list()).data;
for (const name of ['a', 'b']) {
  const m = models.find((x) => x.id === name);
  check(m && m.parent === base, `models.list has adapter ${name} with parent ${base}`);
}

const prompt = 'Once upon a time';
async function complete(model) {
  const r = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0 });
  check(r.model === model, `answer names model ${model}`);
  return r.choices[0].text;
}
async function streamed(model) {
  const s = await client.completions.create({ model, prompt, max_tokens: 12, temperature: 0, stream: true });
  let t = '';
  for await (const chunk of s) t += chunk.choices[0]?.text ?? '';
  return t;
}

// Each alone, then both adapters and the base at once (streamed and not): the same texts.
const alone = { a: await complete('a'), b: await complete('b'), [base]: await complete(base) };
check(alone.a !== alone.b && alone.a !== alone[base] && alone.b !== alone[base], 'the adapters change the text');
const order = ['a', 'b', base, 'b', 'a'];
const together = await Promise.all([...order.map(complete), ...order.map(streamed)]);
together.forEach((t, i) => {
  const m = order[i % order.length];
  check(t === alone[m], `concurrent ${i < order.length ? 'plain' : 'streamed'} ${m} equals alone`);
});

finish();
