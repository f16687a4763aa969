// The dataflow view: the scopes as nodes, layered by level from left to right, and the
// edges between them with their transformers and pending counts, drawn as SVG by this
// module (nothing loaded from elsewhere). Live: redrawn (throttled) as events arrive, and
// every few seconds for the buffers' pending counts. On a phone the drawing scrolls and
// zooms inside its box, and the same edges are listed as text below it.
import {api} from './api.js';
import {h, fill, fmtNum} from './dom.js';
import {throttle} from './live.js';
import {layout, NODE_W, NODE_H} from './flowlayout.js';

const SVG = 'http://www.w3.org/2000/svg';
const POLL_MS = 5000;
const CHAR_W = 6.3;     // the labels' average glyph width at 11px
const LINE_H = 13;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function nodeLabel(n) {
  if (n.layer === 'team') return n.level ? `${n.owner} ${n.level}` : `team ${n.owner}`;
  if (n.layer === 'collective' || n.layer === 'other') return n.scope;
  if (n.layer === 'contents') return 'timeline';  // what mem.timeline() reads
  return n.level || n.scope;
}

function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

// A cubic curve from the source's right side to the target's left side; -> (path, point at t)
function curve(a, b) {
  const x1 = a.x + NODE_W;
  const y1 = a.y + NODE_H / 2;
  const x2 = b.x;
  const y2 = b.y + NODE_H / 2;
  const dx = Math.max(40, (x2 - x1) / 2);
  const c1 = [x1 + dx, y1];
  const c2 = [x2 - dx, y2];
  const at = (t) => {
    const u = 1 - t;
    return [u * u * u * x1 + 3 * u * u * t * c1[0] + 3 * u * t * t * c2[0] + t * t * t * x2,
      u * u * u * y1 + 3 * u * u * t * c1[1] + 3 * u * t * t * c2[1] + t * t * t * y2];
  };
  return {d: `M${x1},${y1} C${c1[0]},${c1[1]} ${c2[0]},${c2[1]} ${x2 - 6},${y2}`, at};
}

function overlap(a, b) {
  const w = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
  const hh = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
  return w > 0 && hh > 0 ? w * hh : 0;
}

// One label per edge, except where edges of the same transformers converge on one target
// (an edge per agent into team or collective): one label there, near the target, with the
// count and the pending summed. Labels slide along their curve until they overlap no node
// and no label placed before.
const MID = [0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8, 0.45, 0.55];
const NEAR_TARGET = [0.8, 0.72, 0.64, 0.56, 0.48, 0.4, 0.32];

export function labelGroups(edges) {
  const by = new Map();
  for (const g of edges) {
    const k = `${g.target}\u0000${g.parts.map((p) => p.transformer).join('+')}`;
    if (!by.has(k)) by.set(k, []);
    by.get(k).push(g);
  }
  return [...by.values()].map((gs) => {
    const names = gs[0].parts.map((p) => p.transformer);
    const sized = gs.filter((g) => g.pending !== null);
    const lines = gs.length > 1 ? [`${names.join(' + ')} ×${gs.length}`] : names.slice();
    // "0 pending" on every edge would crowd the drawing: a count shows once there is one
    const pending = sized.reduce((n, g) => n + g.pending, 0);
    if (pending) lines.push(`${pending} pending`);
    return {edges: gs, lines, busy: pending > 0, pending: sized.length ? pending : null};
  });
}

function placeLabels(L, groups) {
  // a node hidden under a label costs more than two labels touching
  const taken = L.nodes.map((n) => ({x: n.x - 2, y: n.y - 2, w: NODE_W + 4, h: NODE_H + 4, cost: 10}));
  return groups.map((lg) => {
    // a converging group's label sits on its middle member's curve
    const mid = lg.edges[Math.floor((lg.edges.length - 1) / 2)];
    const c = curve(L.at.get(mid.source), L.at.get(mid.target));
    const w = Math.max(...lg.lines.map((x) => x.length)) * CHAR_W + 6;
    const hh = lg.lines.length * LINE_H + 2;
    let box = null;
    let best = Infinity;
    for (const t of lg.edges.length > 1 ? NEAR_TARGET : MID) {
      const [px, py] = c.at(t);
      const b = {x: px - w / 2, y: py - hh / 2, w, h: hh, cost: 1};
      const cost = taken.reduce((n, o) => n + o.cost * overlap(o, b), 0);
      if (cost < best) { box = b; best = cost; }
      if (!cost) break;
    }
    taken.push(box);
    return box;
  });
}

export function drawGraph(L) {
  const groups = labelGroups(L.edges);
  const boxes = placeLabels(L, groups);
  const svg = s('svg', {id: 'flow-graph', viewBox: `0 0 ${L.width} ${L.height}`,
    width: L.width, height: L.height, role: 'img',
    'aria-label': `dataflow: ${L.nodes.length} scopes, ${L.edges.length} edges`},
  s('defs', null, s('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse'},
  s('path', {d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head'}))));
  L.layers.forEach((l, i) => svg.appendChild(s('text', {class: 'col-head', x: L.colX(i) + NODE_W / 2,
    y: 14, 'text-anchor': 'middle'}, l)));
  for (const b of L.lanes) {
    svg.appendChild(s('rect', {class: 'lane', x: 4, y: b.y - 4, width: L.width - 8, height: b.height + 8, rx: 6}));
    svg.appendChild(s('text', {class: 'lane-head', x: 10, y: b.y + b.height / 2 + 4}, b.lane));
  }
  L.edges.forEach((g) => {
    const busy = g.pending ? ' busy' : '';
    const c = curve(L.at.get(g.source), L.at.get(g.target));
    svg.appendChild(s('path', {class: `flow-edge${busy}`, d: c.d, 'marker-end': 'url(#arrow)',
      'data-source': g.source, 'data-target': g.target, 'data-pending': g.pending ?? ''},
    s('title', null, `${g.source} → ${g.target}\n` + g.parts.map((p) =>
      `${p.transformer} (${p.edge})${p.pending === null ? '' : `: ${p.pending} pending`}`).join('\n'))));
  });
  for (const n of L.nodes) {
    // a table of contents is no scope: its node opens the agent's timeline view
    const href = n.layer === 'contents' ? `#/timeline?agent=${encodeURIComponent(n.owner)}`
      : `#/entry/${encodeURIComponent(n.scope)}`;
    svg.appendChild(s('a', {href, class: 'flow-node', 'data-scope': n.scope},
      s('title', null, `${n.scope}: ${n.count ?? '?'} entries (open its entries)`),
      s('rect', {x: n.x, y: n.y, width: NODE_W, height: NODE_H, rx: 5}),
      s('text', {class: 'node-name', x: n.x + 8, y: n.y + 15}, nodeLabel(n)),
      s('text', {class: 'node-count', x: n.x + 8, y: n.y + 30, 'data-count': n.count ?? ''},
        n.count === null ? '' : plural(n.count, 'entry', 'entries'))));
  }
  groups.forEach((lg, i) => {
    const b = boxes[i];
    svg.appendChild(s('g', {class: `edge-label${lg.busy ? ' busy' : ''}`, 'data-target': lg.edges[0].target,
      'data-pending': lg.pending ?? '',
      'data-sources': lg.edges.map((g) => g.source).join(' ')},
      s('rect', {x: b.x, y: b.y, width: b.w, height: b.h, rx: 3}),
      lg.lines.map((t, j) => s('text', {x: b.x + b.w / 2, y: b.y + 11 + j * LINE_H,
        'text-anchor': 'middle', class: t.endsWith(' pending') ? 'pending' : 'transformer'}, t))));
  });
  return svg;
}

function edgeList(L) {
  return h('div.scroll', null, h('table#flow-list', null,
    h('thead', null, h('tr', null, ['from', 'to', 'transformer', 'pending'].map((x) => h('th', null, x)))),
    h('tbody', null, L.edges.flatMap((g) => g.parts.map((p) => h('tr', {dataset: {edge: p.edge}},
      h('td.scope', null, g.source), h('td.scope', null, g.target),
      h('td.transformer', null, p.transformer),
      h('td.num', null, p.pending === null ? '—' : String(p.pending))))))));
}

export default function flowView(root, ctx) {
  const summary = h('p.summary#flow-summary');
  const box = h('div.flow-box#flow-box');
  const list = h('details#flow-details', {open: window.innerWidth < 760},
    h('summary', null, 'the same edges as a list'));
  let zoom = 1;
  let fitted = false;
  let L = null;
  const setZoom = (z) => {
    zoom = Math.max(0.25, Math.min(2, z));
    const svg = box.querySelector('svg');
    if (svg && L) { svg.setAttribute('width', L.width * zoom); svg.setAttribute('height', L.height * zoom); }
  };
  const tools = h('div.flow-tools', null,
    h('button.small', {type: 'button', title: 'zoom out', onclick: () => setZoom(zoom / 1.25)}, '−'),
    h('button.small', {type: 'button', title: 'zoom in', onclick: () => setZoom(zoom * 1.25)}, '+'),
    h('button.small', {type: 'button', title: 'fit the width',
      onclick: () => L && setZoom((box.clientWidth - 4) / L.width)}, 'fit'));
  fill(root, h('h1', null, 'Dataflow'), summary, tools, box, list);
  let stopped = false;
  const load = async () => {
    try {
      let m = await api('/v1/map');
      // As the map view: an agent whose map has no edges gets its hierarchy's from the gateway.
      if (!m.edges.length) m = {...m, edges: (await api('/v1/dashboard/edges')).edges};
      if (stopped) return;
      L = layout(m.scopes, m.edges);
      const sized = m.edges.filter((e) => e.pending !== null && e.pending !== undefined);
      const pending = sized.reduce((n, e) => n + e.pending, 0);
      fill(summary, `${plural(L.nodes.length, 'scope', 'scopes')}, ` +
        `${plural(m.edges.length, 'edge', 'edges')}` +
        (sized.length ? `, ${pending} events pending in edge buffers (an edge shows its count while it has one)`
          : ' (pending counts: not readable by this token)') +
        (L.hidden ? `; ${L.hidden} empty ${L.hidden === 1 ? 'scope' : 'scopes'} without edges not drawn` : ''));
      fill(box, drawGraph(L));
      if (!fitted) {  // first draw: the whole width at once on a wide screen (a phone pans)
        fitted = true;
        const fit = (box.clientWidth - 4) / L.width;
        if (window.innerWidth >= 760 && fit < 1) zoom = Math.max(0.6, fit);
      }
      setZoom(zoom);
      fill(list, list.firstChild, edgeList(L));
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const refresh = throttle(() => { if (!stopped) load(); }, 1000);
  const off = ctx.hub.on(refresh);
  const timer = setInterval(refresh, POLL_MS);
  return {dispose() { stopped = true; off(); clearInterval(timer); }};
}
