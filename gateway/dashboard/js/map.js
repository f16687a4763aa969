// View 1, the memory map: every visible scope grouped by owner (agent, team, collective)
// and level, with count, capacity, TTL and decay, and the dataflow edges with their pending
// buffers. Refreshed (throttled) as events arrive.
import {api} from './api.js';
import {h, fill, fmtNum} from './dom.js';
import {throttle} from './live.js';
import {LEVELS} from './levels.js';
import {plural} from './values.js';


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

function top(counts, n = 2) {
  const items = Object.entries(counts || {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const shown = items.slice(0, n).map(([k, v]) => `${k || 'workers'} ${v}`).join(', ');
  return items.length > n ? `${shown}, +${items.length - n}` : shown;
}

// The memory pool (issue 27 item 5): per scope holding or having evicted entries, its
// live count, what maintenance evicted, average strength, top categories and sources.
function poolTable(stats) {
  const rows = Object.values(stats.scopes)
    .filter((s) => s.count || s.evicted_total)
    .sort((a, b) => b.count - a.count || a.scope.localeCompare(b.scope)).slice(0, 20);
  if (!rows.length) return null;
  return h('section.pool', null, h('h2', null, 'Memory pool'),
    h('div.scroll', null, h('table#pool', null,
      h('thead', null, h('tr', null, ['scope', 'entries', 'evicted', 'avg strength',
        'top tags', 'agents'].map((x) => h('th', null, x)))),
      h('tbody', null, rows.map((s) => h('tr', {dataset: {scope: s.scope}},
        h('td', null, s.scope), h('td.num', null, String(s.count)),
        h('td.num', {title: Object.entries(s.removed || {}).map(([k, v]) => `${k} ${v}`).join(', ')},
          String(s.evicted_total ?? 0)),
        h('td.num', null, s.avg_strength === null || s.avg_strength === undefined ? '-'
          : s.avg_strength.toFixed(2)),
        h('td', null, top(s.tags)), h('td', null, top(s.agents))))))));
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

export function renderMap(el, m, stats) {
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
    h('p.summary', null, `${plural(m.scopes.length, 'scope')}, ${plural(total, 'entry', 'entries')}, ${plural(m.edges.length, 'edge')}`,
      sized.length ? h('span', null, ', ', h('span#pending-total', null, String(pending)),
        ' pending in edge buffers')
        : ' (buffer sizes: an operator token; an agent\'s Redis user cannot read them)'),
    stats ? poolTable(stats) : null,
    [...groups.entries()].sort().map(([k, scopes]) => h('section.group', {dataset: {group: k}},
      h('h2', null, k),
      h('div.scopes', null, scopes.sort((a, b) => levelRank(a) - levelRank(b) ||
        a.scope.localeCompare(b.scope)).map((s) => scopeCard(s, bySource.get(s.scope) || []))))));
}

export default function mapView(root, ctx) {
  const body = h('div.map');
  fill(root, h('h1', null, 'Memory map'), body);
  let stopped = false;
  // The pool statistics read up to 1,000 entries of a scope: refreshed every 10 s at most,
  // not on every burst of events as the map's counts are.
  let stats = null;
  let statsAt = 0;
  const load = async () => {
    try {
      // The statistics are asked for beside the map, not after it: one wait, not two.
      const asked = !stats || Date.now() - statsAt > 10000 ? api('/v1/stats') : null;
      if (asked) asked.catch(() => {});  // seen below, when awaited
      let m = await api('/v1/map');
      // An agent's map has no edges (its Redis user cannot read them): the gateway names
      // the edges of its hierarchy, without buffer sizes.
      if (!m.edges.length) m = {...m, edges: (await api('/v1/dashboard/edges')).edges};
      if (asked) {
        stats = await asked;
        statsAt = Date.now();
      }
      if (stopped) return;
      renderMap(body, m, stats);
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const off = ctx.hub.on(throttle(() => { if (!stopped) load(); }, 1000));
  return {dispose() { stopped = true; off(); }};
}
