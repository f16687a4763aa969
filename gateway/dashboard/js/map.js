// View 1, the memory map: every visible scope grouped by owner (agent, team, collective)
// and level, with count, capacity, TTL and decay, and the dataflow edges with their pending
// buffers. Refreshed (throttled) as events arrive.
import {api} from './api.js';
import {h, fill, fmtNum} from './dom.js';
import {throttle} from './live.js';
import {LEVELS} from './levels.js';


function fmtTtl(s) {
  if (s === null || s === undefined) return 'none';
  if (s < 120) return `${fmtNum(s, 0)}s`;
  if (s < 7200) return `${fmtNum(s / 60, 0)}m`;
  return `${fmtNum(s / 3600, 1)}h`;
}

function scopeCard(s, edgesOut) {
  const c = s.config || {};
  const cap = c.max_entries ? `${s.count} / ${c.max_entries}` : `${s.count}`;
  const full = c.max_entries ? Math.min(1, s.count / c.max_entries) : 0;
  return h('div.scope-card', {dataset: {scope: s.scope}},
    h('div.scope-head', null,
      h('a.scope-name', {href: `#/events?scope=${encodeURIComponent(s.scope)}`,
        title: 'live events of this scope'}, s.level || s.scope),
      h('span.count', {dataset: {count: s.count}}, cap)),
    c.max_entries ? h('div.meter', null, h('span', {style: {width: `${100 * full}%`}})) : null,
    h('div.scope-meta', null,
      h('span', null, `TTL ${fmtTtl(c.ttl)}`),
      h('span', null, c.decay_rate ? `decay ${fmtNum(c.decay_rate, 3)}/${fmtTtl(c.decay_tick)}`
        : 'no decay'),
      c.max_entries ? h('span', null, `on full: ${c.on_full}`) : null,
      s.writable ? null : h('span.ro', null, 'read-only')),
    h('div.scope-actions', null,
      h('a', {href: `#/entry/${encodeURIComponent(s.scope)}`}, 'entries')),
    edgesOut.length ? h('ul.edges', null, edgesOut.map((e) => h('li', {dataset: {edge: e.edge}},
      '→ ', h('span.edge-target', null, e.target), ' ',
      h('span.transformer', null, e.transformer), ' ',
      e.pending === null ? null
        : h('span.pending', {title: 'events buffered, not yet transformed'}, `${e.pending} pending`)))) : null);
}

function groupKey(s) {
  if (s.kind === 'agent') return `agent ${s.owner}`;
  if (s.kind === 'team') return `team ${s.owner}`;
  return s.kind;
}

function levelRank(s) {
  const l = (s.level || '').replace(/^ltm:/, '');
  const i = LEVELS.indexOf(l);
  return i < 0 ? -1 : i;
}

export function renderMap(el, m) {
  const groups = new Map();
  for (const s of m.scopes) {
    const k = groupKey(s);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(s);
  }
  const bySource = new Map();
  for (const e of m.edges) {
    if (!bySource.has(e.source)) bySource.set(e.source, []);
    bySource.get(e.source).push(e);
  }
  const total = m.scopes.reduce((n, s) => n + s.count, 0);
  const sized = m.edges.filter((e) => e.pending !== null);
  const pending = sized.reduce((n, e) => n + e.pending, 0);
  fill(el,
    h('p.summary', null, `${m.scopes.length} scopes, ${total} entries, ${m.edges.length} edges`,
      sized.length ? h('span', null, ', ', h('span#pending-total', null, String(pending)),
        ' pending in edge buffers')
        : ' (buffer sizes: an operator token; an agent\'s Redis user cannot read them)'),
    [...groups.entries()].sort().map(([k, scopes]) => h('section.group', {dataset: {group: k}},
      h('h2', null, k),
      h('div.scopes', null, scopes.sort((a, b) => levelRank(a) - levelRank(b) ||
        a.scope.localeCompare(b.scope)).map((s) => scopeCard(s, bySource.get(s.scope) || []))))));
}

export default function mapView(root, ctx) {
  const body = h('div.map');
  fill(root, h('h1', null, 'Memory map'), body);
  let stopped = false;
  const load = async () => {
    try {
      let m = await api('/v1/map');
      // An agent's map has no edges (its Redis user cannot read them): the gateway names
      // the edges of its hierarchy, without buffer sizes.
      if (!m.edges.length) m = {...m, edges: (await api('/v1/dashboard/edges')).edges};
      if (stopped) return;
      renderMap(body, m);
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const off = ctx.hub.on(throttle(() => { if (!stopped) load(); }, 1000));
  return {dispose() { stopped = true; off(); }};
}
