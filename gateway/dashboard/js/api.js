// The REST client of the dashboard: the token lives in sessionStorage (gone with the tab),
// every call sends it as a bearer token, and the gateway runs it as the token's Redis user.

const KEY = 'bb-dashboard-token';

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? `${status} ${body.error}: ${body.detail}` : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

function headers(extra) {
  const t = token.get();
  return Object.assign({Accept: 'application/json'}, t ? {Authorization: `Bearer ${t}`} : {},
    extra || {});
}

export async function api(path, opts = {}) {
  const init = {method: opts.method || 'GET', headers: headers(opts.headers), signal: opts.signal};
  if (opts.body !== undefined) {
    init.body = JSON.stringify(opts.body);
    init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  if (r.status === 204) return null;
  let body = null;
  try { body = await r.json(); } catch { body = null; }
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, String(x));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, {once: true});
});

/**
 * Follow /v1/events (Server-Sent Events). EventSource cannot send an Authorization header,
 * so the stream is read with fetch; after a drop it reconnects with Last-Event-ID, which
 * the gateway resumes from. onStatus(state, detail) reports 'live' | 'retrying' | 'denied'.
 */
export async function followEvents(onEvent, onStatus, signal) {
  let last = null;
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const extra = {Accept: 'text/event-stream'};
      if (last) extra['Last-Event-ID'] = last;
      // No scope named: every scope the token may read (an operator's: every registered one).
      const r = await fetch('/v1/events', {headers: headers(extra), signal});
      if (r.status === 401 || r.status === 403) {
        onStatus('denied', `HTTP ${r.status}`);
        return;
      }
      if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
      onStatus('live', '');
      backoff = 500;
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n?/g, '\n');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const msg = parseBlock(block);
          if (msg.id) last = msg.id;
          if (msg.data) {
            try { onEvent(JSON.parse(msg.data), msg); } catch (e) { console.warn(e); }
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      onStatus('retrying', String(e));
    }
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}

function parseBlock(block) {
  const msg = {id: null, event: null, data: ''};
  for (const line of block.split('\n')) {
    if (!line || line[0] === ':') continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') msg.id = val;
    else if (field === 'event') msg.event = val;
    else if (field === 'data') msg.data += (msg.data ? '\n' : '') + val;
  }
  return msg;
}
