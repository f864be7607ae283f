// A small Markdown renderer for the chat page: fenced code blocks (highlighted), headings, lists,
// block quotes, paragraphs, and inline code, bold, italic and http(s) links. Everything is
// escaped first, so model output can never inject markup. An unfinished fence (while streaming)
// renders the rest as code.
'use strict';

(function () {
  const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

  const KEYWORDS = new Set(('abstract and as async await break case catch class const continue def default del do elif ' +
    'else enum except export extends false final finally fn for from func function go if impl import in interface ' +
    'is let match mod mut namespace new nil none not null or package private protected pub public raise return ' +
    'self static struct super switch template this throw true try type typedef typeof union unsigned use var ' +
    'void while with yield int char bool float double long auto string True False None').split(' '));

  // Strings, comments, numbers and keywords of most languages, one pass left to right.
  function highlight(code, lang) {
    const hashComments = /^(py|python|sh|bash|shell|ruby|rb|yaml|yml|toml|r|perl|makefile|cmake)$/i.test(lang || '');
    const re = hashComments
      ? /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|#[^\n]*|\b\d[\w.]*\b|\b[A-Za-z_]\w*\b)/g
      : /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\/\/[^\n]*|\/\*[\s\S]*?\*\/|\b\d[\w.]*\b|\b[A-Za-z_]\w*\b)/g;
    let out = '';
    let last = 0;
    for (const m of code.matchAll(re)) {
      const t = m[0];
      out += escapeHtml(code.slice(last, m.index));
      last = m.index + t.length;
      let cls = '';
      if (t[0] === '"' || t[0] === "'" || t[0] === '`') cls = 'hl-str';
      else if (t.startsWith('//') || t.startsWith('/*') || t[0] === '#') cls = 'hl-com';
      else if (/^\d/.test(t)) cls = 'hl-num';
      else if (KEYWORDS.has(t)) cls = 'hl-kw';
      out += cls ? `<span class="${cls}">${escapeHtml(t)}</span>` : escapeHtml(t);
    }
    return out + escapeHtml(code.slice(last));
  }

  function inline(text) {
    let s = escapeHtml(text);
    const codes = [];
    s = s.replace(/`([^`]+)`/g, (_, c) => { codes.push(c); return `\u0000${codes.length - 1}\u0000`; });
    s = s.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
    s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>');
    s = s.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
    return s.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[+i]}</code>`);
  }

  function blocks(text) {
    const lines = text.split('\n');
    let html = '';
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i++; continue; }
      let m;
      if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
        html += `<h${m[1].length + 2}>${inline(m[2])}</h${m[1].length + 2}>`;
        i++;
      } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
        const ordered = /^\s*\d+[.)]/.test(line);
        const items = [];
        while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
          items.push(lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ''));
          i++;
        }
        const tag = ordered ? 'ol' : 'ul';
        html += `<${tag}>${items.map((t) => `<li>${inline(t)}</li>`).join('')}</${tag}>`;
      } else if (line.startsWith('>')) {
        const quote = [];
        while (i < lines.length && lines[i].startsWith('>')) quote.push(lines[i++].replace(/^>\s?/, ''));
        html += `<blockquote>${blocks(quote.join('\n'))}</blockquote>`;
      } else {
        const para = [];
        while (i < lines.length && lines[i].trim() && !/^(#{1,6}\s|>|\s*([-*+]|\d+[.)])\s)/.test(lines[i])) para.push(lines[i++]);
        if (!para.length) para.push(lines[i++]);
        html += `<p>${para.map(inline).join('<br>')}</p>`;
      }
    }
    return html;
  }

  function renderMarkdown(text) {
    let html = '';
    const fence = /^```([\w+-]*)[^\n]*\n([\s\S]*?)(?:^```[ \t]*$|$(?![\s\S]))/gm;
    let last = 0;
    for (const m of text.matchAll(fence)) {
      html += blocks(text.slice(last, m.index));
      const lang = m[1];
      html += `<pre><code class="lang-${escapeHtml(lang)}">${highlight(m[2].replace(/\n$/, ''), lang)}</code></pre>`;
      last = m.index + m[0].length;
    }
    return html + blocks(text.slice(last));
  }

  window.renderMarkdown = renderMarkdown;
  window.escapeHtml = escapeHtml;
})();
