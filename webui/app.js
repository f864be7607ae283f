// The chat page of `ferrum serve`: conversations kept in this browser's local storage, answers
// streamed from /v1/chat/completions (reasoning folded apart, tool calls and JSON shown readably),
// a stop button that aborts the request (the server then cancels it), settings, themes.
'use strict';

const $ = (id) => document.getElementById(id);
const store = {
  get(key, fallback) {
    try { return JSON.parse(localStorage.getItem(`ferrum.${key}`)) ?? fallback; } catch { return fallback; }
  },
  set(key, value) { localStorage.setItem(`ferrum.${key}`, JSON.stringify(value)); },
};

const settings = Object.assign({ system: '', temperature: 0.8, top_p: 0.95, max_tokens: 512, api_key: '' }, store.get('settings', {}));
let conversations = store.get('conversations', []);
let currentId = store.get('current', null);
let modelName = '';
let running = null; // { controller, message }

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (settings.api_key) h.Authorization = `Bearer ${settings.api_key}`;
  return h;
}

function current() {
  return conversations.find((c) => c.id === currentId);
}

function save() {
  store.set('conversations', conversations);
  store.set('current', currentId);
}

function newConversation() {
  const c = { id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`, title: 'New chat', messages: [] };
  conversations.unshift(c);
  currentId = c.id;
  save();
  return c;
}

// ---- rendering ----

function prettyJson(text) {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return null;
  try { return JSON.stringify(JSON.parse(t), null, 2); } catch { return null; }
}

function renderAssistant(m) {
  let html = '';
  if (m.reasoning) {
    html += `<details class="reasoning"><summary>Reasoning</summary>${renderMarkdown(m.reasoning)}</details>`;
  }
  const json = m.content ? prettyJson(m.content) : null;
  html += json ? renderMarkdown('```json\n' + json + '\n```') : renderMarkdown(m.content || '');
  for (const call of m.tool_calls || []) {
    const args = prettyJson(call.arguments || '') ?? (call.arguments || '');
    html += `<div class="tool-call"><strong>Tool call:</strong> <code>${escapeHtml(call.name || '')}</code>` +
      renderMarkdown('```json\n' + args + '\n```') + '</div>';
  }
  if (m.error) html += `<p class="error" role="alert">${escapeHtml(m.error)}</p>`;
  if (m.stats) html += `<div class="stats">${escapeHtml(m.stats)}</div>`;
  return html;
}

function messageElement(m) {
  const el = document.createElement('div');
  el.className = `msg ${m.role}`;
  el.setAttribute('aria-label', m.role === 'user' ? 'You' : 'Assistant');
  if (m.role === 'user') el.textContent = m.content;
  else el.innerHTML = renderAssistant(m);
  return el;
}

function renderMessages() {
  const box = $('messages');
  box.replaceChildren(...(current()?.messages ?? []).map(messageElement));
  box.scrollTop = box.scrollHeight;
}

function renderList() {
  const list = $('conversations');
  list.replaceChildren(...conversations.map((c) => {
    const li = document.createElement('li');
    if (c.id === currentId) li.className = 'current';
    const open = document.createElement('button');
    open.className = 'open';
    open.type = 'button';
    open.textContent = c.title;
    open.onclick = () => { if (!running) { currentId = c.id; save(); render(); } };
    const del = document.createElement('button');
    del.className = 'delete';
    del.type = 'button';
    del.textContent = '✕';
    del.setAttribute('aria-label', `Delete conversation ${c.title}`);
    del.onclick = () => {
      if (running) return;
      conversations = conversations.filter((x) => x.id !== c.id);
      if (currentId === c.id) currentId = conversations[0]?.id ?? null;
      save();
      render();
    };
    li.append(open, del);
    return li;
  }));
}

function render() {
  renderList();
  renderMessages();
}

// ---- streaming ----

// Server-sent events from a fetch body, one parsed "data:" object at a time.
async function* sse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        yield JSON.parse(data);
      }
    }
  }
}

function setRunning(r) {
  running = r;
  $('send').hidden = !!r;
  $('stop').hidden = !r;
}

async function send(text) {
  const conv = current() ?? newConversation();
  if (conv.messages.length === 0) conv.title = text.slice(0, 48);
  conv.messages.push({ role: 'user', content: text });
  const answer = { role: 'assistant', content: '', reasoning: '', tool_calls: [] };
  conv.messages.push(answer);
  save();
  render();
  const el = $('messages').lastElementChild;
  const messages = [];
  if (settings.system) messages.push({ role: 'system', content: settings.system });
  for (const m of conv.messages.slice(0, -1)) messages.push({ role: m.role, content: m.content || '' });
  const controller = new AbortController();
  setRunning({ controller, answer });
  const started = performance.now();
  let first = 0;
  let usage = null;
  let pending = false;
  const redraw = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      el.innerHTML = renderAssistant(answer);
      $('messages').scrollTop = $('messages').scrollHeight;
    });
  };
  try {
    const response = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: headers(),
      signal: controller.signal,
      body: JSON.stringify({
        model: modelName || undefined, messages, stream: true, stream_options: { include_usage: true },
        temperature: +settings.temperature, top_p: +settings.top_p, max_tokens: +settings.max_tokens,
      }),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error?.message ?? `HTTP ${response.status}`);
    }
    for await (const chunk of sse(response)) {
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) usage = chunk.usage;
      const d = chunk.choices?.[0]?.delta;
      if (!d) continue;
      if (!first && (d.content || d.reasoning_content || d.tool_calls)) first = performance.now();
      if (d.reasoning_content) answer.reasoning += d.reasoning_content;
      if (d.content) answer.content += d.content;
      for (const tc of d.tool_calls || []) {
        const call = (answer.tool_calls[tc.index ?? 0] ??= { name: '', arguments: '' });
        if (tc.function?.name) call.name += tc.function.name;
        if (tc.function?.arguments) call.arguments += tc.function.arguments;
      }
      redraw();
    }
    const seconds = (performance.now() - (first || started)) / 1000;
    if (usage) {
      const rate = seconds > 0 ? usage.completion_tokens / seconds : 0;
      answer.stats = `${modelName} · ${usage.completion_tokens} tokens · ${rate.toFixed(1)} tokens/s`;
    }
  } catch (e) {
    if (e.name === 'AbortError') answer.stats = `${modelName} · stopped`;
    else answer.error = e.message;
  } finally {
    setRunning(null);
    save();
    el.innerHTML = renderAssistant(answer);
    renderList();
  }
}

function stop() {
  if (running) running.controller.abort();
}

// ---- settings and theme ----

function bindSetting(id, key) {
  const input = $(id);
  input.value = settings[key];
  input.addEventListener('change', () => { settings[key] = input.value; store.set('settings', settings); });
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  store.set('theme', theme);
}

// The served models (the base model, its aliases and LoRA adapters) in the model menu.
async function loadModel() {
  let ids = [];
  try {
    const r = await fetch('/v1/models', { headers: headers() });
    const j = await r.json();
    ids = (j.data ?? []).map((m) => m.id);
  } catch { ids = []; }
  const select = $('model-name');
  select.replaceChildren(...ids.map((id) => new Option(id, id)));
  const saved = store.get('model', '');
  modelName = ids.includes(saved) ? saved : (ids[0] ?? '');
  select.value = modelName;
}

function init() {
  bindSetting('system-prompt', 'system');
  bindSetting('temperature', 'temperature');
  bindSetting('top-p', 'top_p');
  bindSetting('max-tokens', 'max_tokens');
  bindSetting('api-key', 'api_key');
  $('api-key').addEventListener('change', loadModel);
  $('model-name').addEventListener('change', (e) => { modelName = e.target.value; store.set('model', modelName); });
  applyTheme(store.get('theme', matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
  $('theme-toggle').onclick = () => applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
  $('settings-toggle').onclick = () => {
    const s = $('settings');
    s.hidden = !s.hidden;
    $('settings-toggle').setAttribute('aria-expanded', String(!s.hidden));
  };
  $('new-chat').onclick = () => { if (!running) { newConversation(); render(); $('input').focus(); } };
  $('composer').onsubmit = (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    if (!text || running) return;
    $('input').value = '';
    send(text);
  };
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') stop(); });
  $('stop').onclick = stop;
  loadModel();
  render();
  $('input').focus();
}

init();
