// View 3, the entry inspector: value, tags, metadata, strength and its decay curve, and
// provenance both ways (sources it derives from, entries derived from it), each a link, so
// one can walk from a belief down to the raw steps. Without an id: the scope's newest entries.
import {api, query} from './api.js';
import {h, fill, fmtTime, fmtNum, text, clip, entryLink, table} from './dom.js';
import {throttle} from './live.js';
import entriesView from './entries.js';

function drawCurve(canvas, d) {
  const pts = d.curve;
  const w = canvas.clientWidth || 500;
  const hh = canvas.clientHeight || 140;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = w * dpr;
  canvas.height = hh * dpr;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (!pts.length) return;
  const t0 = pts[0][0];
  const t1 = pts[pts.length - 1][0] || t0 + 1;
  const top = Math.max(1, ...pts.map((p) => p[1]));
  const x = (t) => 30 + ((t - t0) / (t1 - t0 || 1)) * (w - 40);
  const y = (s) => hh - 16 - (s / top) * (hh - 28);
  g.strokeStyle = '#bbb';
  g.beginPath(); g.moveTo(30, y(d.policy.evict_threshold)); g.lineTo(w - 10, y(d.policy.evict_threshold)); g.stroke();
  g.fillStyle = '#888';
  g.font = '11px sans-serif';
  g.fillText('evict', 0, y(d.policy.evict_threshold) + 4);
  g.fillText(fmtNum(top, 1), 0, 12);
  g.strokeStyle = '#4e79a7';
  g.lineWidth = 2;
  g.beginPath();
  pts.forEach(([t, s], i) => (i ? g.lineTo(x(t), y(s)) : g.moveTo(x(t), y(s))));
  g.stroke();
  if (d.now >= t0 && d.now <= t1) {
    g.fillStyle = '#e15759';
    g.beginPath(); g.arc(x(d.now), y(d.strength_now), 4, 0, 7); g.fill();
    g.fillText('now', x(d.now) - 10, hh - 2);
  }
}

function linkList(items, empty) {
  if (!items.length) return h('p.muted', null, empty);
  return h('ul.prov', null, items.map((it) => h('li', {dataset: {id: it.id}},
    it.missing ? h('span.muted', null, `${it.id} (gone or not readable)`)
      : entryLink(it.scope, it.id, clip(it.text || it.id, 90)),
    ' ', h('span.scope', null, it.scope || ''),
    it.transformer ? h('span.transformer', null, ` ${it.transformer} v${it.transformer_version}`) : null,
    it.raw ? h('span.badge', null, 'raw step') : null)));
}

function renderEntry(el, d) {
  const e = d.entry;
  const canvas = h('canvas#decay-curve', {height: 140});
  const p = d.provenance;
  fill(el,
    h('h1', null, 'Entry ', h('code#entry-id', null, e.id)),
    h('p.summary', null, h('a', {href: `#/entry/${encodeURIComponent(e.scope)}`}, e.scope),
      ` · v${e.version} · created ${fmtTime(e.created_at)} · updated ${fmtTime(e.updated_at)}`,
      e.expires_at ? ` · expires ${fmtTime(e.expires_at)}` : '',
      e.author ? h('span#entry-author', null, ` · written by ${e.author}`) : '',
      (e.claimed_agents || []).length
        ? h('span.muted#entry-claims', null, ` (its data claims ${e.claimed_agents.join(', ')})`) : '',
      e.superseded_by ? h('span', null, ' · superseded by ', entryLink(e.scope, e.superseded_by)) : ''),
    h('section', null, h('h2', null, 'Value'), h('pre#entry-value', null,
      typeof e.value === 'string' ? e.value : JSON.stringify(e.value, null, 2))),
    h('section', null, h('h2', null, 'Tags'), h('div.tags#entry-tags', null,
      e.tags.map((t) => h('span.tag', null, t)))),
    h('section.grid2', null,
      h('div', null, h('h2', null, 'Strength'),
        h('p', null, `now ${fmtNum(d.strength_now)} (stored ${fmtNum(e.strength)} at ${fmtTime(e.strength_at)}),`,
          ` importance ${fmtNum(e.importance, 2)}, reinforced ${e.reinforcements}×`,
          e.reinforced_by.length ? ` by ${e.reinforced_by.join(', ')}` : ''),
        h('p.muted', null, d.policy.decay_rate
          ? `decays ${fmtNum(d.policy.decay_rate)} per ${fmtNum(d.policy.decay_tick, 0)}s tick; evicted below ${d.policy.evict_threshold}`
          : 'this scope does not decay'),
        canvas),
      h('div', null, h('h2', null, 'Metadata'), h('pre.meta', null, JSON.stringify(e.metadata, null, 2)))),
    h('section.grid2', null,
      h('div#sources', null, h('h2', null, 'Derived from'),
        p ? h('p.muted', null, `by ${p.transformer} v${p.version} on edge ${p.edge}${p.model ? ` (model ${p.model})` : ''}`) : null,
        linkList(d.sources, 'nothing: a raw step'),
        (d.merged || []).length
          ? h('p.muted#merged', null, `merged with ${d.merged.length} duplicate(s), deleted by dedupe: `,
            d.merged.map((i) => h('code', null, i + ' ')))
          : null),
      h('div#derived', null, h('h2', null, 'Derived into'), linkList(d.derived, 'nothing yet'))));
  requestAnimationFrame(() => drawCurve(canvas, d));
}

function renderList(el, scope, entries) {
  fill(el, h('h1', null, 'Entries of ', h('code', null, scope)),
    h('p.summary', null, `newest ${entries.length}`),
    h('div.scroll', null, table(['created', 'entry', 'tags', 'strength'], entries.map((e) => [
      fmtTime(e.created_at), entryLink(e.scope, e.id, clip(text(e.value), 100)),
      h('span.tags', null, e.tags.slice(0, 6).join(' ')), fmtNum(e.strength, 2)]))));
}

function pickScope(el, ctx) {
  api('/v1/map').then((m) => {
    fill(el, h('h1', null, 'Entry inspector'), h('p', null, 'Pick a scope, then an entry:'),
      h('ul.scope-pick', null, m.scopes.map((s) => h('li', null,
        h('a', {href: `#/entry/${encodeURIComponent(s.scope)}`}, s.scope), ` (${s.count})`))));
    ctx.ready();
  }, ctx.fail);
}

export default function entryView(root, ctx) {
  const [scope, id] = ctx.args;
  const el = h('div.entry');
  fill(root, el);
  if (!scope) { pickScope(el, ctx); return null; }
  if (!id) return entriesView(root, ctx);  // a scope's entries: pages and a text filter
  let stopped = false;
  let watch = new Set([scope]);  // where a change shows on this page
  const load = async () => {
    try {
      if (id) {
        const d = await api(`/v1/dashboard/entries/${encodeURIComponent(id)}${query({scope})}`);
        watch = new Set([scope, ...d.derived_scopes]);
        if (!stopped) renderEntry(el, d);
      } else {
        const d = await api(`/v1/dashboard/scopes/${encodeURIComponent(scope)}/entries${query({limit: 100})}`);
        if (!stopped) renderList(el, scope, d.entries);
      }
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const refresh = throttle(() => { if (!stopped) load(); }, 1000);
  // An entry page reloads when the entry changes or a scope its derivatives go to is
  // written; a list when its scope is written.
  const off = ctx.hub.on((ev) => {
    if (id ? ev.entry_id === id || (ev.scope !== scope && watch.has(ev.scope)) : ev.scope === scope) {
      refresh();
    }
  });
  return {dispose() { stopped = true; off(); }};
}
