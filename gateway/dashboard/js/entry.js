// View 3, the entry inspector: value, tags, metadata, strength and its decay curve, and
// provenance both ways (sources it derives from, entries derived from it), each a link, so
// one can walk from a belief down to the raw steps. Without an id: the scope's entries, a
// page at a time (entries.js).
import {api, query} from './api.js';
import {h, fill, fmtTime, fmtNum, clip, entryLink} from './dom.js';
import {throttle} from './live.js';
import {valueView, fields, rawToggle, plural} from './values.js';
import {drawDecay, tickText} from './decay.js';
import entriesView from './entries.js';

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
  const canvas = h('canvas#decay-curve', {height: 160});
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
    h('section#entry-value', null, h('h2', null, 'Value'), valueView(e), rawToggle(e.value, 'entry-raw')),
    h('section', null, h('h2', null, 'Tags'), h('div.tags#entry-tags', null,
      e.tags.map((t) => h('span.tag', null, t)))),
    h('section.grid2', null,
      h('div', null, h('h2', null, 'Strength'),
        h('p', null, `now ${fmtNum(d.strength_now)} (stored ${fmtNum(e.strength)} at ${fmtTime(e.strength_at)}),`,
          ` importance ${fmtNum(e.importance, 2)}, reinforced ${e.reinforcements}×`,
          e.reinforced_by.length ? ` by ${e.reinforced_by.join(', ')}` : ''),
        h('p.muted', null, d.policy.decay_rate
          ? `decays ${fmtNum(d.policy.decay_rate)} per ${tickText(d.policy.decay_tick)}; evicted below ${d.policy.evict_threshold}`
          : 'this scope does not decay'),
        canvas),
      h('div', null, h('h2', null, 'Metadata'), h('div.value-view.meta', null, fields(e.metadata || {}, ['provenance'])),
        rawToggle(e.metadata))),
    h('section.grid2', null,
      h('div#sources', null, h('h2', null, 'Derived from'),
        p ? h('p.muted', null, `by ${p.transformer} v${p.version} on edge ${p.edge}${p.model ? ` (model ${p.model})` : ''}`) : null,
        linkList(d.sources, 'nothing: a raw step'),
        (d.merged || []).length
          ? h('p.muted#merged', null, `merged with ${plural(d.merged.length, 'duplicate')}, deleted by dedupe: `,
            d.merged.map((i) => h('code', null, i + ' ')))
          : null),
      h('div#derived', null, h('h2', null, 'Derived into'), linkList(d.derived, 'nothing yet'))));
  requestAnimationFrame(() => drawDecay(canvas, d));
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
      const d = await api(`/v1/dashboard/entries/${encodeURIComponent(id)}${query({scope})}`);
      watch = new Set([scope, ...d.derived_scopes]);
      if (!stopped) renderEntry(el, d);
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const refresh = throttle(() => { if (!stopped) load(); }, 1000);
  // An entry page reloads when the entry changes or a scope its derivatives go to is
  // written.
  const off = ctx.hub.on((ev) => {
    if (ev.entry_id === id || (ev.scope !== scope && watch.has(ev.scope))) refresh();
  });
  return {dispose() { stopped = true; off(); }};
}
