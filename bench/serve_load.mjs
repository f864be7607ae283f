// Load test for `ferrum serve` (no dependencies; Node >= 18 for fetch).
// 1) sends every request alone, one after another (reference output + sequential throughput);
// 2) sends them all at once as streaming requests; each streamed answer must equal its own
//    single-request answer (nothing lost or mixed up); compares generated tokens/s.
// Usage: node bench/serve_load.mjs URL [N=32] [MAX_TOKENS=64] [MODEL=ferrum]
const [url = 'http://127.0.0.1:8080', nArg = '32', maxArg = '64', model = 'ferrum'] = process.argv.slice(2);
const N = Number(nArg), MAX = Number(maxArg);
const subjects = ['a cat', 'a dog', 'a bird', 'a frog', 'a king', 'a girl', 'a boy', 'a tree', 'the sun', 'a fish',
                  'a ball', 'a car', 'a bear', 'a duck', 'a cake', 'a star'];
const prompts = Array.from({ length: N }, (_, i) => `Once upon a time there was ${subjects[i % subjects.length]}` +
                                                   (i >= subjects.length ? ` number ${i}` : '') + '.');
const body = (prompt, stream) => JSON.stringify({ model, prompt, max_tokens: MAX, temperature: 0, stream,
                                                  ignore_eos: true, stream_options: stream ? { include_usage: true } : undefined });

async function once(prompt) {
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(prompt, false) });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const j = await r.json();
  return { text: j.choices[0].text, tokens: j.usage.completion_tokens };
}

async function streamed(prompt) {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(prompt, true) });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  let buf = '', text = '', tokens = 0, done = false, ttft = null;
  const dec = new TextDecoder();
  for await (const part of r.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k); buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ')) continue;  // an SSE comment (keep-alive)
      const data = ev.slice(6);
      if (data === '[DONE]') { done = true; continue; }
      const j = JSON.parse(data);
      if (j.usage) tokens = j.usage.completion_tokens;
      for (const c of j.choices) { if (c.text && ttft === null) ttft = performance.now() - t0; text += c.text; }
    }
  }
  if (!done) throw new Error('stream ended without [DONE]');
  return { text, tokens, ttft };
}

const seq = [];
let t0 = performance.now();
for (const p of prompts) seq.push(await once(p));
const seqS = (performance.now() - t0) / 1000;
const seqTok = seq.reduce((a, r) => a + r.tokens, 0);

t0 = performance.now();
const par = await Promise.all(prompts.map(streamed));
const parS = (performance.now() - t0) / 1000;
const parTok = par.reduce((a, r) => a + r.tokens, 0);
let mismatches = 0;
// A mismatch is classified: equal to another request's answer (a mix-up), or the same text up to
// some point and then different (a numerical near-tie flipped by a different batch shape).
let mixups = 0;
par.forEach((r, i) => {
  if (r.text === seq[i].text && r.tokens === seq[i].tokens) return;
  mismatches++;
  const other = seq.findIndex((s, k) => k !== i && s.text === r.text);
  if (other >= 0) mixups++;
  let k = 0;
  while (k < r.text.length && r.text[k] === seq[i].text[k]) k++;
  console.error(`MISMATCH request ${i}: ${other >= 0 ? `equals request ${other}'s answer` : `diverges at char ${k}`}` +
                `\n  alone:   ${JSON.stringify(seq[i].text)}\n  batched: ${JSON.stringify(r.text)}`);
});
const ttfts = par.map((r) => r.ttft).sort((a, b) => a - b);
console.log(JSON.stringify({
  requests: N, max_tokens: MAX, completed: par.length, mismatches, mixups,
  sequential: { seconds: +seqS.toFixed(2), tokens: seqTok, tok_per_s: +(seqTok / seqS).toFixed(1) },
  concurrent: { seconds: +parS.toFixed(2), tokens: parTok, tok_per_s: +(parTok / parS).toFixed(1),
                ttft_ms_p50: +ttfts[Math.floor(N / 2)].toFixed(1), ttft_ms_max: +ttfts[N - 1].toFixed(1) },
  speedup: +((parTok / parS) / (seqTok / seqS)).toFixed(2),
}, null, 1));
process.exit(mismatches === 0 ? 0 : 1);
