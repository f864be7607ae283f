// The official Ollama JavaScript client (`ollama` on npm) against a running `ferrum serve`: chat
// and generate, streamed (NDJSON, Ollama's default) and not, with the same greedy text; list, ps,
// show, version, embed; and a clear error for pull (no registry).
// Usage: node ollama_client_test.mjs BASE_URL MODEL_ID
// Exits 0 when every check passes; prints what failed otherwise.
import { Ollama } from 'ollama';
import { check, finish } from './checks.mjs';

const [host, model] = process.argv.slice(2);
if (!host || !model) {
  console.error('usage: node ollama_client_test.mjs BASE_URL MODEL_ID');
  process.exit(2);
}
const ollama = new Ollama({ host });
const options = { temperature: 0, num_predict: 24 };

// Chat, not streamed, then streamed: the same text.
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const chat = await ollama.chat({ model: `${model}:latest`, messages, stream: false, options });
check(chat.done === true && chat.message.role === 'assistant', 'chat done, from the assistant');
check(typeof chat.message.content === 'string' && chat.message.content.length > 0, 'chat content');
check(chat.done_reason === 'length' && chat.eval_count === 24 && chat.prompt_eval_count > 0, `chat counts (${chat.done_reason}, ${chat.eval_count})`);
check(chat.total_duration > 0 && chat.eval_duration > 0, 'chat durations');
let text = '', parts = 0, last = null;
for await (const part of await ollama.chat({ model, messages, stream: true, options })) {
  parts++;
  text += part.message.content;
  last = part;
}
check(parts >= 2 && last.done === true, `chat stream of ${parts} parts ends with done`);
check(text === chat.message.content, `streamed chat equals non-streamed (${JSON.stringify(text)} vs ${JSON.stringify(chat.message.content)})`);
check(last.eval_count === chat.eval_count, 'streamed eval_count');

// Generate: templated and raw.
const gen = await ollama.generate({ model, prompt: 'Tell me a story about a cat.', stream: false, options });
check(gen.response === chat.message.content, 'generate (templated) equals chat with one user message');
let gtext = '';
for await (const part of await ollama.generate({ model, prompt: 'Once upon a time', raw: true, stream: true, options })) gtext += part.response;
const raw = await ollama.generate({ model, prompt: 'Once upon a time', raw: true, stream: false, options });
check(gtext === raw.response && raw.response.length > 0, 'raw generate, streamed == not');

// The model's listings.
const list = await ollama.list();
check(list.models.some((m) => m.name === `${model}:latest`), `list has ${model}:latest`);
const ps = await ollama.ps();
check(ps.models.length === 1, 'ps lists the served model');
const show = await ollama.show({ model });
check(show.model_info && show.model_info['embedding_length'] > 0, 'show model_info');
const version = await ollama.version();
check(typeof version.version === 'string', `version ${version.version}`);

// Embeddings of the decoder (last-token hidden states, normalized).
const emb = await ollama.embed({ model, input: ['a red ball', 'Once upon a time'] });
check(emb.embeddings.length === 2 && emb.embeddings[0].length > 0, 'embed two inputs');
const norm = Math.hypot(...emb.embeddings[0]);
check(Math.abs(norm - 1) < 1e-4, `embedding unit length (${norm})`);

// No registry: pull is refused with a message saying what to do.
try {
  await ollama.pull({ model: 'llama3.2', stream: false });
  check(false, 'pull refused');
} catch (e) {
  check(String(e.message).includes('no model registry'), `pull refused (${e.message})`);
}

finish();
