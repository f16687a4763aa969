// View 2, the live event flow: writes, updates, consolidations, expiries and evictions of
// the scopes the token may read, filtered by scope, type and tag (the filters are in the
// URL), and the events/s chart by level. Only the hub's capped history is kept.
import {h, fill, fmtTime, entryLink} from './dom.js';
import {drawRates, levelColor} from './chart.js';
import {HISTORY_CAP, throttle} from './live.js';

const SHOWN = 200;
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
      h('td', null, ev.type === 'deleted' ? ev.entry_id : entryLink(ev.scope, ev.entry_id)),
      h('td', null, String(ev.version)), h('td.tags', null, (ev.tags || []).join(' ')));
  }

  function render() {
    const shown = [];
    for (let i = ctx.hub.history.length - 1; i >= 0 && shown.length < SHOWN; i--) {
      const ev = ctx.hub.history[i];
      if (matches(ev, f)) shown.push(ev);
    }
    fill(list, shown.map(row));
    fill(counter, `${ctx.hub.total} events since this page opened; keeping the last ` +
      `${Math.min(ctx.hub.history.length, HISTORY_CAP)} (cap ${HISTORY_CAP}); showing ${shown.length}`);
  }

  function draw() {
    const levels = drawRates(canvas, ctx.hub.rates);
    fill(legend, levels.map((l) => h('span.key', null,
      h('i', {style: {background: levelColor(levels, l)}}), l)));
  }

  render();
  draw();
  ctx.ready();
  const off = ctx.hub.on(throttle(render, 250));
  const timer = setInterval(draw, 1000);
  return {dispose() { off(); clearInterval(timer); }};
}
