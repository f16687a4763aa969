// The timeline view (issue 28): an agent's table of contents, year -> month -> week -> day ->
// segment. Each node shows its span, entry count, top tags, keywords, actors and summary;
// its children are listed with a count bar and link down; a segment lists its raw entries,
// each a link to the entry view. #/timeline?agent=A&at=<node id> or &segment=<ref>. An
// agent token reads only its own table; an operator token picks the agent. Times are UTC,
// as the table of contents cuts days.
import {api, query} from './api.js';
import {h, fill, clip, text, entryLink, levelOf} from './dom.js';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
  'September', 'October', 'November', 'December'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const KIDS = {root: 'Years', year: 'Months', month: 'Weeks', week: 'Days', day: 'Segments'};
const DAY_MS = 86400000;

const dayMs = (iso) => Date.parse(`${iso}T00:00:00Z`);
const utc = (ms) => new Date(ms);
const mon = (d) => MONTHS[d.getUTCMonth()].slice(0, 3);
const dmy = (ms) => { const d = utc(ms); return `${d.getUTCDate()} ${mon(d)} ${d.getUTCFullYear()}`; };
const hm = (ms) => utc(ms).toISOString().slice(11, 16);
/** From a to b on one day's clock: to the second when the minute cannot tell them apart. */
function clock(a, b) {
  if (a === b) return hm(a);
  const n = hm(a) === hm(b) ? 19 : 16;
  return `${utc(a).toISOString().slice(11, n)}–${utc(b).toISOString().slice(11, n)}`;
}

/** The first day of a day's week within its month (as the table of contents cuts weeks). */
function weekStart(ms) {
  const d = utc(ms);
  return Math.max(ms - ((d.getUTCDay() + 6) % 7) * DAY_MS, Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

function weekLabel(startMs) {
  const s = utc(startMs);
  const monthEnd = Date.UTC(s.getUTCFullYear(), s.getUTCMonth() + 1, 1) - DAY_MS;
  const end = utc(Math.min(startMs + (6 - (s.getUTCDay() + 6) % 7) * DAY_MS, monthEnd));
  const a = s.getUTCDate();
  const b = end.getUTCDate();
  return `${a === b ? a : `${a}–${b}`} ${mon(s)} ${s.getUTCFullYear()}`;
}

/** A node's name from its id alone (the breadcrumbs above the node read). */
function idLabel(id) {
  let m;
  if (id === 'root') return 'All time';
  if ((m = /^y(\d{4})$/.exec(id))) return m[1];
  if ((m = /^m(\d{4})-(\d{2})$/.exec(id))) return `${MONTHS[Number(m[2]) - 1]} ${m[1]}`;
  if ((m = /^w(\d{4}-\d{2}-\d{2})$/.exec(id))) return `week ${weekLabel(dayMs(m[1]))}`;
  if ((m = /^d(\d{4}-\d{2}-\d{2})$/.exec(id))) {
    const ms = dayMs(m[1]);
    return `${DAYS[utc(ms).getUTCDay()]} ${dmy(ms)}`;
  }
  if ((m = /^s(\d{4}-\d{2}-\d{2})\.(\d+)$/.exec(id))) return `segment ${Number(m[2]) + 1}`;
  return id;
}

/** A node's name: a segment by its hours and the level of its scope. */
function nodeLabel(n) {
  if (n.level !== 'segment') return idLabel(n.id);
  return `${clock(n.start_ms, n.end_ms)} · ${levelOf(n.scope)}`;
}

/** The ids from the root down to node ``id`` (a segment's: down to its day). */
function pathTo(id) {
  const m = /^[ymwds](\d{4})(?:-(\d{2}))?(?:-(\d{2}))?/.exec(id);
  if (!m) return ['root'];
  const out = ['root', `y${m[1]}`];
  if (id[0] === 'y') return out;
  out.push(`m${m[1]}-${m[2]}`);
  if (id[0] === 'm') return out;
  if (id[0] === 'w') return [...out, id];
  const day = `${m[1]}-${m[2]}-${m[3]}`;
  const w = new Date(weekStart(dayMs(day))).toISOString().slice(0, 10);
  return [...out, `w${w}`, `d${day}`];
}

function spanText(n) {
  if (!n.start_ms) return '';
  const a = dmy(n.start_ms);
  const b = dmy(n.end_ms);
  if (a === b) return `${a}, ${clock(n.start_ms, n.end_ms)} UTC`;
  return `${a} ${hm(n.start_ms)} – ${b} ${hm(n.end_ms)} UTC`;
}

const names = (counts, n) => Object.keys(counts || {}).slice(0, n);
const entries = (k) => `${k} ${k === 1 ? 'entry' : 'entries'}`;

function facets(n, few) {
  const rows = [['actors', names(n.actors, few ? 4 : 10)], ['tags', names(n.tags, few ? 5 : 12)],
    ['keywords', names(n.keywords, few ? 8 : 16)]];
  return h('dl.tl-facets', null, rows.filter(([, xs]) => xs.length).map(([k, xs]) => [
    h('dt', null, k), h('dd', {dataset: {facet: k}}, xs.map((x) => h('span.tag', null, x)))]));
}

function nodeHead(n) {
  return h('section.tl-node#tl-node', {dataset: {id: n.id, ref: n.ref, level: n.level, count: n.count}},
    h('h2', null, nodeLabel(n), ' ', h('span.muted', null, n.level)),
    h('p.summary', null, h('span.tl-span', null, spanText(n)), ' · ',
      h('span.tl-count', null, entries(n.count))),
    n.summary ? h('p.tl-summary', null, n.summary) : h('p.muted', null, 'no summary yet'),
    facets(n, false));
}

function childRow(c, max, href) {
  const pct = Math.max(2, Math.round((100 * c.count) / (max || 1)));
  return h('li.tl-child', {dataset: {id: c.id, ref: c.ref, level: c.level, count: c.count}},
    h('div.tl-child-head', null,
      h('a.tl-open', {href: href(c)}, nodeLabel(c)),
      h('span.tl-span.muted', null, spanText(c))),
    h('div.tl-bar', {title: entries(c.count)},
      h('span.bar-track', null, h('span.bar-fill', {style: {width: `${pct}%`}})),
      h('span.tl-n', null, String(c.count))),
    c.summary ? h('p.tl-summary', null, c.summary) : null,
    facets(c, true));
}

/** An entry's value as one readable line: a message's text, a belief's statement, an
 * episode's or procedure's task and steps, else its text (JSON at worst). */
function line(v) {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return text(v);
  if (typeof v.statement === 'string') return v.statement;
  if (Array.isArray(v.steps)) {
    const what = v.title || v.task || v.name || v.task_kind || 'steps';
    const steps = v.steps.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
    return `${what}${v.outcome ? ` (${v.outcome})` : ''}: ${steps.join(' · ')}`;
  }
  return text(v);
}

function entryRow(e) {
  const v = e.value && typeof e.value === 'object' ? e.value : {};
  const when = v.kind === 'message' && typeof v.at === 'string' ? Date.parse(v.at) : e.created_at;
  const who = (v.kind === 'message' && v.speaker) || e.author || '';
  return h('tr', {dataset: {id: e.id}},
    h('td.when', null, Number.isFinite(when) ? `${dmy(when)} ${utc(when).toISOString().slice(11, 19)}` : '—'),
    h('td.speaker', null, who),
    h('td.text', null, entryLink(e.scope, e.id, clip(line(e.value), 400)),
      e.tags.length ? h('span.tags', null, ' ', e.tags.slice(0, 6).join(' ')) : null),
    h('td.id', null, h('code', null, e.id)));
}

export default function timelineView(root, ctx) {
  const p = ctx.params;
  const segment = p.get('segment') || '';
  const want = p.get('agent') || '';
  const sid = segment.slice(segment.lastIndexOf('#') + 1);
  // A segment's page reads its day (the segment's own node is among the day's children);
  // a malformed ref is left to the expand call, whose refusal names the field.
  const day = /^s(\d{4}-\d{2}-\d{2})\.\d+$/.exec(sid);
  const at = segment ? (day ? `d${day[1]}` : '') : (p.get('at') || '');
  const picker = h('div.tl-agent#tl-agent');
  const crumbs = h('nav.crumbs#tl-crumbs', {'aria-label': 'path'});
  const body = h('div#tl-body', null, h('p.muted', null, 'Loading…'));
  fill(root, h('h1', null, 'Timeline'), picker, crumbs, body);
  let stopped = false;

  const link = (agent, o) => `#/timeline${query(Object.assign({agent: ctx.me.operator ? agent : ''}, o))}`;
  const show = async () => {
    const reqs = [api(`/v1/dashboard/timeline${query({agent: want, at, depth: 1})}`)];
    if (segment) reqs.push(api(`/v1/dashboard/timeline/expand${query({agent: want, segment})}`));
    const [d, seg] = await Promise.all(reqs);
    if (stopped) return;
    const agent = d.agent;
    const go = (c) => link(agent, c.level === 'segment' ? {segment: c.ref} : {at: c.id});
    fill(picker, ctx.me.operator
      ? h('label', null, 'agent ', h('select', {name: 'agent', onchange: (e) => {
        location.hash = link(e.target.value, {});
      }}, (d.agents.includes(agent) ? d.agents : [agent, ...d.agents]).map((a) =>
        h('option', {value: a, selected: a === agent}, a))))
      : h('span.muted', null, `${agent}'s memory by time (UTC)`));
    if (!d.tree) {
      fill(crumbs);
      fill(body, h('p.muted#tl-missing', null, `Nothing here for ${agent} yet: ${d.missing} `,
        'The timeline worker role builds the table of contents as entries arrive; ',
        h('code', null, `blackboard timeline --agent ${agent} --rebuild`), ' builds it from the entries.'));
      ctx.ready();
      return;
    }
    const t = d.tree;
    const node = segment ? t.nodes.find((c) => c.ref === segment) : null;
    const path = pathTo(t.id);
    fill(crumbs, path.map((id, i) => [i ? h('span.sep', null, ' › ') : null,
      (i === path.length - 1 && !segment) ? h('strong', null, idLabel(id))
        : h('a', {href: link(agent, id === 'root' ? {} : {at: id})}, idLabel(id))]),
    segment ? [h('span.sep', null, ' › '), h('strong', null, node ? nodeLabel(node) : sid)] : null);
    if (segment) {
      fill(body, node ? nodeHead(node) : h('h2', null, segment),
        h('h2', null, `Entries (${seg.entries.length})`),
        seg.entries.length ? h('div.scroll', null, h('table.tl-entries#tl-entries', null,
          h('thead', null, h('tr', null, ['when', 'who', 'entry', 'id'].map((x) => h('th', null, x)))),
          h('tbody', null, seg.entries.map(entryRow))))
          : h('p.muted', null, 'its entries are gone (deleted or evicted since)'));
    } else {
      const max = Math.max(0, ...t.nodes.map((c) => c.count));
      fill(body, nodeHead(t),
        h('h2', null, `${KIDS[t.level] || 'Below'} (${t.nodes.length})`),
        t.nodes.length ? h('ol.tl-children#tl-children', null, t.nodes.map((c) => childRow(c, max, go)))
          : h('p.muted', null, 'nothing below'));
    }
    ctx.ready();
  };
  show().catch((e) => { if (!stopped) { fill(body); ctx.fail(e); } });
  return {dispose() { stopped = true; }};
}
