// View 2, the live event flow: writes, updates, consolidations, expiries and evictions of
// the scopes the token may read, filtered by scope, type and tag (the filters are in the
// URL), and the events/s chart by level. Only the hub's capped history is kept.
import {api} from './api.js';
import {h, fill, fmtTime, entryLink, clip} from './dom.js';
import {drawRates, levelColor} from './chart.js';
import {HISTORY_CAP, throttle} from './live.js';
import {plural} from './values.js';

const SHOWN = 200;
const BACKFILL = 100;   // events read from the feeds when the view opens
const TEXTS_MAX = 200;  // texts asked in one call (the gateway's cap)
const TYPES = ['', 'written', 'updated', 'deleted', 'expired', 'evicted', 'reinforced'];

function matches(ev, f) {
  if (f.scope && !ev.scope.includes(f.scope)) return false;
  if (f.type && ev.type !== f.type) return false;
  if (f.tag && !(ev.tags || []).some((t) => t.includes(f.tag))) return false;
  return true;
}

export default function eventsView(root, ctx) {
  const f = {scope: ctx.params.get('scope') || '', type: ctx.params.get('type') || '',
    tag: ctx.params.get('tag') || ''};
  const sync = () => {
    const q = new URLSearchParams(Object.entries(f).filter(([, v]) => v)).toString();
    history.replaceState(null, '', `#/events${q ? '?' + q : ''}`);
    render();
  };
  const input = (k, ph) => h('input', {value: f[k], placeholder: ph, name: k,
    oninput: (e) => { f[k] = e.target.value.trim(); sync(); }});
  const typeSel = h('select', {name: 'type', onchange: (e) => { f.type = e.target.value; sync(); }},
    TYPES.map((t) => h('option', {value: t, selected: t === f.type}, t || 'any type')));
  const canvas = h('canvas#rate-chart', {height: 160});
  const legend = h('div.legend');
  const counter = h('p.summary');
  const list = h('tbody#event-rows');
  fill(root, h('h1', null, 'Live events'),
    h('div.chart-box', null, h('h2', null, 'Events per second by level, last 5 minutes'), canvas, legend),
    h('form.filters', {onsubmit: (e) => e.preventDefault()},
      input('scope', 'scope contains'), typeSel, input('tag', 'tag contains')),
    counter,
    h('div.scroll', null, h('table.events', null,
      h('thead', null, h('tr', null, ['time', 'type', 'scope', 'entry', 'v', 'tags'].map((x) => h('th', null, x)))),
      list)));

  function row(ev) {
    return h('tr', {dataset: {type: ev.type, scope: ev.scope}},
      h('td', null, fmtTime(ev.at)), h('td', null, h('span.type', {dataset: {type: ev.type}}, ev.type)),
      h('td.scope', null, ev.scope),
      h('td.text', null, entryText(ev)),
      h('td', null, `v${ev.version}`), h('td.tags', {title: (ev.tags || []).join(' ')}, clip((ev.tags || []).join(' '), 90)));
  }

  // What an entry says, then its id: the text while the entry lives, "gone" after.
  function entryText(ev) {
    const id = h('code.entry-id', null, ev.entry_id);
    if (ev.type === 'deleted' || ev.text === null) {
      return [h('span.muted', null, ev.type === 'deleted' ? 'deleted' : 'gone (deleted or expired)'), ' ', id];
    }
    if (ev.text === undefined) return [entryLink(ev.scope, ev.entry_id, ev.entry_id)];
    return [entryLink(ev.scope, ev.entry_id, clip(ev.text, 140)), ' ', id];
  }

  // The live stream names entries; their texts are fetched in batches behind it.
  let asking = false;
  const fetchTexts = throttle(async () => {
    if (asking) return;
    const want = ctx.hub.history.filter((ev) => ev.text === undefined && ev.type !== 'deleted')
      .slice(-TEXTS_MAX);
    if (!want.length) return;
    asking = true;
    try {
      const got = await api('/v1/dashboard/texts', {method: 'POST',
        body: {refs: want.map((ev) => ({scope: ev.scope, id: ev.entry_id}))}});
      const by = new Map(got.texts.map((t) => [`${t.scope}\u0000${t.id}`, t.text]));
      for (const ev of want) ev.text = by.get(`${ev.scope}\u0000${ev.entry_id}`) ?? null;
      if (!stopped) render();
    } catch (e) {
      console.warn(e);
    } finally {
      asking = false;
    }
  }, 400);

  function render() {
    const shown = [];
    for (let i = ctx.hub.history.length - 1; i >= 0 && shown.length < SHOWN; i--) {
      const ev = ctx.hub.history[i];
      if (matches(ev, f)) shown.push(ev);
    }
    fill(list, shown.map(row));
    fill(counter, `${plural(ctx.hub.total, 'event')} since this page opened, ${ctx.hub.seeded} earlier ones ` +
      `read from the feeds; keeping the last ${Math.min(ctx.hub.history.length, HISTORY_CAP)} ` +
      `(cap ${HISTORY_CAP}); showing ${shown.length}`);
  }

  function draw() {
    const levels = drawRates(canvas, ctx.hub.rates);
    fill(legend, levels.map((l) => h('span.key', null,
      h('i', {style: {background: levelColor(levels, l)}}), l)));
  }

  let stopped = false;
  draw();
  // Recent history first, as `blackboard tail` shows it; the live stream goes on behind.
  api(`/v1/dashboard/events/recent?limit=${BACKFILL}`).then((d) => {
    if (stopped) return;
    ctx.hub.seed(d.events);
    render();
    fetchTexts();
    ctx.ready();
  }, (e) => { if (!stopped) { render(); ctx.fail(e); } });
  const off = ctx.hub.on(throttle(() => { render(); fetchTexts(); }, 250));
  const timer = setInterval(draw, 1000);
  return {dispose() { stopped = true; off(); clearInterval(timer); }};
}
