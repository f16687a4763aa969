// Tiny DOM helpers. Every text goes through textContent (never innerHTML), so an entry's
// value cannot inject markup into the page.

/** h('div.cls#id', {attr: v, onclick: f}, child, ...) -> Element */
export function h(spec, attrs, ...children) {
  const m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
  const el = document.createElement(m ? m[1] : 'div');
  for (const part of (m ? m[2] : '').match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
      else if (k in el && k !== 'list' && typeof v !== 'string') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replace every child of el with children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function fmtTime(ms) {
  if (!ms) return '—';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

export function fmtAgo(ms, now = Date.now()) {
  if (!ms) return '—';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function fmtNum(x, digits = 3) {
  if (x === null || x === undefined) return 'n/a';
  return Number.isInteger(x) ? String(x) : Number(x).toFixed(digits);
}

export function text(value) {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    for (const k of ['text', 'statement', 'summary', 'content']) {
      if (typeof value[k] === 'string') return value[k];
    }
  }
  return JSON.stringify(value);
}

export function clip(s, n = 120) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

/** A horizontal bar of value in [0, max] with its number. */
export function bar(label, value, max = 1) {
  const v = value === null || value === undefined ? 0 : value;
  const pct = Math.max(0, Math.min(100, (100 * v) / (max || 1)));
  return h('div.bar', {title: `${label}: ${fmtNum(value)}`},
    h('span.bar-label', null, label),
    h('span.bar-track', null, h('span.bar-fill', {style: {width: `${pct}%`}})),
    h('span.bar-value', null, fmtNum(value)));
}

/** The memory level of a scope id: agent:a:ltm:semantic -> ltm:semantic. */
export function levelOf(scope) {
  const p = scope.split(':');
  if ((p[0] === 'agent' || p[0] === 'team') && p.length > 2) return p.slice(2).join(':');
  if (p[0] === 'team') return 'team';
  return p[0];
}

export function entryLink(scope, id, label) {
  return h('a.entry-link', {href: `#/entry/${encodeURIComponent(scope)}/${encodeURIComponent(id)}`},
    label || id);
}

export function table(headers, rows) {
  return h('table', null,
    h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
    h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => h('td', null, c))))));
}
