// Soak test of `ferrum serve` (no dependencies; Node >= 18). CLIENTS workers send mixed traffic
// for DURATION_S: streamed chat, non-streamed completions, embeddings (to a second, encoder server),
// clients that hang up mid-answer, malformed requests, and slow clients (headers and body a few
// bytes at a time). Greedy answers are compared with the answer to the same request sent alone
// before the load started. Every minute it prints throughput, the servers' resident memory and
// errors by kind; at the end a JSON summary.
//
// Usage: node bench/soak.mjs DECODER_URL DECODER_PID [ENCODER_URL ENCODER_PID]
// Environment: DURATION_S=1800 CLIENTS=32 MAX_TOKENS=48 REPORT_S=60
import { readFileSync } from 'node:fs';
import net from 'node:net';

const [url, pid, encUrl = '', encPid = ''] = process.argv.slice(2);
const SECONDS = Number(process.env.DURATION_S ?? 1800), CLIENTS = Number(process.env.CLIENTS ?? 32);
const MAX = Number(process.env.MAX_TOKENS ?? 48), REPORT_S = Number(process.env.REPORT_S ?? 60);
const u = new URL(url);
const subjects = ['a cat', 'a dog', 'a bird', 'a frog', 'a king', 'a girl', 'a boy', 'a tree', 'the sun', 'a fish',
                  'a ball', 'a car', 'a bear', 'a duck', 'a cake', 'a star'];
const prompts = subjects.map((s, i) => `Once upon a time there was ${s}. It ${i % 2 ? 'liked' : 'saw'}`);
const chats = subjects.map((s) => [{ role: 'user', content: `Tell me about ${s}.` }]);

function rssMb(p) {
  if (!p) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch { return null; }
}

const post = (base, path, body, signal) => fetch(`${base}${path}`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal,
});

async function completion(prompt) {
  const r = await post(url, '/v1/completions', { prompt, max_tokens: MAX, temperature: 0, ignore_eos: true });
  if (r.status !== 200) throw new Error(`completion HTTP ${r.status}`);
  const j = await r.json();
  return j.choices[0].text;
}

// A streamed chat answer; hangUpAfter > 0 aborts after that many events.
async function chatStream(messages, hangUpAfter = 0) {
  const ac = new AbortController();
  const r = await post(url, '/v1/chat/completions',
                       { messages, max_tokens: MAX, temperature: 0, stream: true }, ac.signal);
  if (r.status !== 200) throw new Error(`chat stream HTTP ${r.status}`);
  let buf = '', text = '', events = 0, done = false;
  const dec = new TextDecoder();
  try {
    for await (const part of r.body) {
      buf += dec.decode(part, { stream: true });
      let k;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, k); buf = buf.slice(k + 2);
        if (!ev.startsWith('data: ')) continue;
        const data = ev.slice(6);
        if (data === '[DONE]') { done = true; continue; }
        const j = JSON.parse(data);
        if (j.error) throw new Error(`stream error: ${j.error.message}`);
        for (const c of j.choices) text += c.delta?.content ?? '';
        if (hangUpAfter && ++events >= hangUpAfter) { ac.abort(); return null; }
      }
    }
  } catch (e) {
    if (hangUpAfter && e.name === 'AbortError') return null;
    throw e;
  }
  if (!done) throw new Error('stream ended without [DONE]');
  return text;
}

async function embeddings(i) {
  const r = await post(encUrl, '/v1/embeddings', { input: [prompts[i % prompts.length], 'second input'] });
  if (r.status !== 200) throw new Error(`embeddings HTTP ${r.status}`);
  const j = await r.json();
  if (j.data.length !== 2) throw new Error('embeddings: wrong count');
  return j.data[0].embedding;
}

const malformed = [
  ['/v1/chat/completions', '{"messages":'],
  ['/v1/chat/completions', '{"messages":[{"role":"wizard","content":"x"}]}'],
  ['/v1/completions', '{"prompt":"a","max_tokens":0}'],
  ['/v1/completions', '{"prompt":"a","x":' + '['.repeat(5000) + ']'.repeat(5000) + '}'],
  ['/v1/completions', '{"prompt":[1,2,99999999]}'],
  ['/v1/chat/completions', '{"messages":[{"role":"user","content":[{"type":7}]}]}'],
];
async function malformedRequest(i) {
  const [path, body] = malformed[i % malformed.length];
  const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const j = await r.json();
  if (r.status < 400 || r.status >= 500 || !j.error) throw new Error(`malformed request got HTTP ${r.status}`);
}

// Headers and body sent a few bytes every 50 ms; the answer must still be right.
function slowClient(prompt) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ prompt, max_tokens: MAX, temperature: 0, ignore_eos: true });
    const req = `POST /v1/completions HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
                `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    const s = net.connect(Number(u.port), u.hostname);
    let out = '', off = 0;
    const timer = setInterval(() => {
      if (off >= req.length) { clearInterval(timer); return; }
      s.write(req.slice(off, off + 8)); off += 8;
    }, 50);
    s.on('data', (d) => { out += d; });
    s.on('error', (e) => { clearInterval(timer); reject(e); });
    s.on('close', () => {
      clearInterval(timer);
      const k = out.indexOf('\r\n\r\n');
      if (!out.startsWith('HTTP/1.1 200') || k < 0) return reject(new Error(`slow client: ${out.slice(0, 40)}`));
      try { resolve(JSON.parse(out.slice(k + 4)).choices[0].text); } catch (e) { reject(e); }
    });
  });
}

// References: each request alone, before the load.
const refCompletion = [], refChat = [];
for (const p of prompts) refCompletion.push(await completion(p));
for (const m of chats) refChat.push(await chatStream(m));
const refEmbedding = encUrl ? await embeddings(0) : null;

const stats = { completed: 0, mismatches: 0, hungUp: 0, malformed: 0, slow: 0, embeddings: 0, errors: {} };
let window = { completed: 0, chars: 0 };
const samples = [];
const t0 = performance.now();
const deadline = t0 + SECONDS * 1000;
const error = (e) => { const k = String(e.message ?? e).replace(/\d+/g, 'N').slice(0, 60); stats.errors[k] = (stats.errors[k] ?? 0) + 1; };

async function worker(w) {
  for (let n = 0; performance.now() < deadline; ++n) {
    const i = (w * 7 + n) % subjects.length;
    const kind = (w + n) % 10;
    try {
      if (kind <= 3) {
        const t = await completion(prompts[i]);
        if (t !== refCompletion[i]) stats.mismatches++;
        stats.completed++; window.completed++; window.chars += t.length;
      } else if (kind <= 6) {
        const t = await chatStream(chats[i]);
        if (t !== refChat[i]) stats.mismatches++;
        stats.completed++; window.completed++; window.chars += t.length;
      } else if (kind === 7) {
        await chatStream(chats[i], 3); stats.hungUp++;
      } else if (kind === 8) {
        await malformedRequest(n); stats.malformed++;
      } else if (encUrl && w % 2 === 0) {
        const e = await embeddings(i);
        if (i === 0 && e.some((x, k) => x !== refEmbedding[k])) stats.mismatches++;
        stats.embeddings++;
      } else if (w % 8 === 1) {
        const t = await slowClient(prompts[i]);
        if (t !== refCompletion[i]) stats.mismatches++;
        stats.slow++;
      } else {
        await malformedRequest(n); stats.malformed++;
      }
    } catch (e) { error(e); }
  }
}

const reporter = setInterval(() => {
  const s = { t_s: Math.round((performance.now() - t0) / 1000), answers_per_s: +(window.completed / REPORT_S).toFixed(2),
              chars_per_s: Math.round(window.chars / REPORT_S), rss_mb: rssMb(pid), enc_rss_mb: rssMb(encPid),
              errors: Object.values(stats.errors).reduce((a, b) => a + b, 0) };
  samples.push(s);
  console.log(JSON.stringify(s));
  window = { completed: 0, chars: 0 };
}, REPORT_S * 1000);

await Promise.all(Array.from({ length: CLIENTS }, (_, w) => worker(w)));
clearInterval(reporter);
const rss = samples.map((s) => s.rss_mb).filter((x) => x !== null);
console.log(JSON.stringify({ summary: { seconds: SECONDS, clients: CLIENTS, ...stats,
  rss_mb_first: rss[0] ?? null, rss_mb_max: rss.length ? Math.max(...rss) : null, rss_mb_last: rss.at(-1) ?? null,
  enc_rss_mb_last: rssMb(encPid) } }));
process.exit(stats.mismatches || Object.keys(stats.errors).length ? 1 : 0);
