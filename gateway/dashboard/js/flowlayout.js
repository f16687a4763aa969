// The dataflow graph's layout, pure (no DOM): scopes placed in columns by level (sensory ->
// working -> stm -> ltm -> contents -> team -> collective) and in one lane per owner, edges between
// them grouped by (source, target) with their transformers and pending counts.

// 'contents': an agent's table of contents (the timeline edges' target, not a scope)
export const LAYERS = ['sensory', 'working', 'stm', 'ltm', 'contents', 'team', 'collective',
  'other'];
const LTM = ['episodic', 'semantic', 'procedural'];

export const NODE_W = 118;
export const NODE_H = 38;
const SLOT = 50;        // vertical room of one node
const COL_GAP = 90;     // horizontal room between columns, where edge labels go
const LANE_GAP = 18;
const LEFT = 64;        // the lane labels
const TOP = 26;         // the column headers

/** The column of a scope: its level for an agent's scope, team or collective otherwise. */
export function layerOf(s) {
  if (s.kind === 'collective' || s.scope === 'collective' || s.scope.startsWith('collective:')) {
    return 'collective';
  }
  if (s.kind === 'team') return 'team';
  const l = s.level || '';
  if (LTM.includes(l) || l.startsWith('ltm')) return 'ltm';
  if (l === 'toc') return 'contents';
  return LAYERS.includes(l) ? l : 'other';
}

function laneOf(s) {
  const layer = layerOf(s);
  if (layer === 'team' || layer === 'collective' || layer === 'other') return `~${layer}`;
  return s.owner || s.scope.split(':')[1] || s.scope;
}

/** The edges grouped by (source, target): one arrow each, every transformer on it. */
export function groupEdges(edges) {
  const by = new Map();
  for (const e of edges) {
    const k = `${e.source}\u0000${e.target}`;
    if (!by.has(k)) by.set(k, {source: e.source, target: e.target, parts: [], pending: null});
    const g = by.get(k);
    g.parts.push({edge: e.edge, transformer: e.transformer, pending: e.pending});
    if (e.pending !== null && e.pending !== undefined) g.pending = (g.pending || 0) + e.pending;
  }
  return [...by.values()];
}

/**
 * Scopes shown: every scope on an edge, and every other scope holding entries (an empty
 * scope no edge touches says nothing about the flow; it is counted, not drawn).
 * -> {nodes: [{scope, layer, lane, x, y, ...s}], edges, lanes, width, height, hidden}
 */
export function layout(scopes, edges) {
  const onEdge = new Set(edges.flatMap((e) => [e.source, e.target]));
  const known = new Set(scopes.map((s) => s.scope));
  // An edge's scope the map does not list (not registered): drawn all the same.
  const all = scopes.concat([...onEdge].filter((x) => !known.has(x)).map((x) => ({
    scope: x, kind: x.split(':')[0], owner: x.split(':')[1], level: x.split(':').pop(), count: null})));
  const shown = all.filter((s) => onEdge.has(s.scope) || s.count);
  const hidden = all.length - shown.length;
  const layers = LAYERS.filter((l) => shown.some((s) => layerOf(s) === l));
  const col = new Map(layers.map((l, i) => [l, i]));
  // lanes: agents (sorted), then team, collective, other, each as tall as its fullest column
  const lanes = new Map();
  for (const s of shown) {
    const lane = laneOf(s);
    if (!lanes.has(lane)) lanes.set(lane, new Map());
    const cols = lanes.get(lane);
    const c = col.get(layerOf(s));
    if (!cols.has(c)) cols.set(c, []);
    cols.get(c).push(s);
  }
  // agents' lanes by name, then the shared ones in the order of their columns
  const shared = (x) => (x[0] === '~' ? 1 + LAYERS.indexOf(x.slice(1)) : 0);
  const order = [...lanes.keys()].sort((a, b) => shared(a) - shared(b) || a.localeCompare(b));
  const nodes = [];
  const laneBoxes = [];
  let y = TOP;
  for (const lane of order) {
    const cols = lanes.get(lane);
    const slots = Math.max(...[...cols.values()].map((xs) => xs.length));
    const height = slots * SLOT;
    laneBoxes.push({lane: lane[0] === '~' ? lane.slice(1) : lane, y, height});
    for (const [c, xs] of cols) {
      xs.sort((a, b) => rank(a) - rank(b) || a.scope.localeCompare(b.scope));
      const off = (height - xs.length * SLOT) / 2;  // a lone node sits mid-lane
      xs.forEach((s, i) => nodes.push({...s, layer: layerOf(s), lane,
        x: LEFT + c * (NODE_W + COL_GAP), y: y + off + i * SLOT + (SLOT - NODE_H) / 2}));
    }
    y += height + LANE_GAP;
  }
  const at = new Map(nodes.map((n) => [n.scope, n]));
  const groups = groupEdges(edges).filter((g) => at.has(g.source) && at.has(g.target));
  return {nodes, edges: groups, lanes: laneBoxes, layers, hidden,
    width: LEFT + layers.length * NODE_W + (layers.length - 1) * COL_GAP + 16,
    height: y - LANE_GAP + 8, colX: (i) => LEFT + i * (NODE_W + COL_GAP), at};
}

function rank(s) {
  const i = LTM.indexOf(s.level);
  if (i >= 0) return i + 1;
  return s.level ? 10 : 0;  // a team's root scope first, then its levels
}
