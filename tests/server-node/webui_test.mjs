// The chat page in headless Chromium (puppeteer-core driving Debian's chromium) against
// `ferrum serve`: the page loads with the model's name, a message gets a streamed answer with its
// tokens/s, Stop during a long answer makes the server cancel the request (its /metrics), a reload
// finds the conversation in local storage, the theme switches; a screenshot is saved and checked
// not blank.
// Usage: node webui_test.mjs BASE_URL CHROMIUM_PATH SCREENSHOT.png
import fs from 'node:fs';
import zlib from 'node:zlib';
import puppeteer from 'puppeteer-core';
import { check, finish } from './checks.mjs';

const [base, chromium, shot] = process.argv.slice(2);
if (!base || !chromium || !shot) {
  console.error('usage: node webui_test.mjs BASE_URL CHROMIUM_PATH SCREENSHOT.png');
  process.exit(2);
}

async function cancelled() {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = text.match(/ferrum_requests_total\{outcome="cancelled"\} (\d+)/);
  return m ? Number(m[1]) : -1;
}

// Whether a PNG's pixels are not all one colour: its rows inflated, the bytes after each row's filter
// byte compared (a blank page is uniform).
function pngHasContent(file) {
  const png = fs.readFileSync(file);
  let pos = 8;
  const idat = [];
  let width = 0;
  while (pos < png.length) {
    const len = png.readUInt32BE(pos);
    const type = png.toString('ascii', pos + 4, pos + 8);
    if (type === 'IHDR') width = png.readUInt32BE(pos + 8);
    if (type === 'IDAT') idat.push(png.subarray(pos + 8, pos + 8 + len));
    pos += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const distinct = new Set();
  for (let i = 0; i < raw.length && distinct.size < 50; i += 97) distinct.add(raw[i]);
  return width > 0 && distinct.size > 8;
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 700 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(base, { waitUntil: 'networkidle0' });
  await page.waitForFunction(() => document.getElementById('model-name').value.length > 0, { timeout: 20000 });
  check(await page.$eval('#model-name', (e) => e.value) === 'test-model', 'the model is chosen in the menu');
  check(await page.$eval('#input', (e) => document.activeElement === e), 'the message box has the focus');

  // A message and its streamed answer (Enter sends).
  await page.type('#input', 'Once upon a time');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.assistant .stats', { timeout: 60000 });
  const first = await page.$eval('.msg.assistant', (e) => e.textContent);
  check(first.length > 20 && /tokens\/s/.test(first), `an answer with its speed (${first.slice(-60)})`);
  check(await page.$eval('.msg.user', (e) => e.textContent) === 'Once upon a time', 'the message is shown');

  // A long answer (past end-of-text: the test adds ignore_eos to the page's request), stopped.
  let sent = null;
  const longer = (req) => {
    if (req.method() === 'POST' && req.url().endsWith('/v1/chat/completions')) {
      const body = JSON.parse(req.postData());
      sent = body;
      req.continue({ postData: JSON.stringify({ ...body, ignore_eos: true, max_tokens: 30000 }) });
    } else {
      req.continue();
    }
  };
  await page.setRequestInterception(true);
  page.on('request', longer);
  const before = await cancelled();
  await page.type('#input', 'Tell me a very long story');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant')[1]?.textContent.length > 30, { timeout: 60000 });
  const grown1 = await page.$eval('.msg.assistant:last-child', (e) => e.textContent.length);
  await new Promise((r) => setTimeout(r, 300));
  const grown2 = await page.$eval('.msg.assistant:last-child', (e) => e.textContent.length);
  check(grown2 > grown1, `the answer streams in (${grown1} -> ${grown2} characters)`);
  check(sent?.model === 'test-model' && sent?.stream === true && sent?.messages?.length === 3,
        `the request names the chosen model and carries the conversation (${JSON.stringify(sent)?.slice(0, 200)})`);
  check(await page.$eval('#stop', (e) => !e.hidden), 'Stop is offered while answering');
  await page.click('#stop');
  await page.waitForSelector('#send:not([hidden])', { timeout: 20000 });
  let after = before;
  for (let i = 0; i < 100 && after <= before; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await cancelled();
  }
  check(after === before + 1, `the server cancelled the request (cancelled ${before} -> ${after})`);
  check(/stopped/.test(await page.$eval('.msg.assistant:last-child', (e) => e.textContent)), 'the answer says it was stopped');
  page.off('request', longer);
  await page.setRequestInterception(false);

  // Dark theme, then a reload: the conversation is still there.
  await page.click('#theme-toggle');
  const theme = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.reload({ waitUntil: 'networkidle0' });
  check(await page.evaluate(() => document.documentElement.dataset.theme) === theme, `the theme is kept (${theme})`);
  const titles = await page.$$eval('#conversations .open', (els) => els.map((e) => e.textContent));
  check(titles.includes('Once upon a time'), `the conversation is listed after a reload (${JSON.stringify(titles)})`);
  check(await page.$$eval('.msg', (els) => els.length) === 4, 'its messages are restored');
  check(await page.$eval('.msg.assistant', (e) => e.textContent) === first, 'the first answer is restored as it was');

  // Markdown: headings, highlighted code, JSON and tool calls shown readably, markup escaped.
  const html = await page.evaluate(() => renderMarkdown('# Title\n\nSome **bold** `x`\n\n```js\nconst s = "a"; // c\n```\n<img src=x onerror=alert(1)>'));
  check(html.includes('<h3>Title</h3>') && html.includes('<strong>bold</strong>') && html.includes('<code>x</code>'), `markdown blocks (${html})`);
  check(html.includes('<span class="hl-kw">const</span>') && html.includes('<span class="hl-str">&quot;a&quot;</span>') &&
        html.includes('<span class="hl-com">// c</span>'), 'code highlighted');
  check(!html.includes('<img') && html.includes('&lt;img'), 'model text cannot inject markup');
  const shown = await page.evaluate(() => renderAssistant({ content: '{"a":1}', reasoning: 'think', tool_calls: [{ name: 'f', arguments: '{"x":2}' }] }));
  check(shown.includes('<details class="reasoning">') && shown.includes('Tool call:') && shown.includes('<span class="hl-str">&quot;a&quot;</span>: <span class="hl-num">1</span>') &&
        shown.includes('<code>f</code>'),
        `reasoning folded, tool calls and JSON shown readably (${shown})`);

  await page.screenshot({ path: shot });
  check(pngHasContent(shot), `the screenshot is not blank (${shot})`);
  check(errors.length === 0, `no script errors (${errors.join('; ')})`);
} finally {
  await browser.close();
}
finish();
