// Entry values as people read them: an episode's steps, a belief's statement with its
// confidence and evidence, a procedure's steps and success rate, a summary's text, and
// any other object as labelled fields with times as dates (never epoch ms). The raw JSON
// stays one click away.
import {h, fmtTime, fmtNum, bar, entryLink, clip} from './dom.js';

// Epoch-ms instants: fields named so, or a number in the range of this century's ms.
const TIME_KEY = /(^at$|_at$|_ms$|^since$|^until$)/;

function isTime(k, v) {
  return typeof v === 'number' && v > 1e12 && v < 1e13 && TIME_KEY.test(k);
}

function label(k) {
  return k.replace(/_ms$/, '').replace(/_/g, ' ');
}

function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120000) return `${fmtNum(ms / 1000, 1)} s`;
  if (ms < 7200000) return `${fmtNum(ms / 60000, 0)} min`;
  return `${fmtNum(ms / 3600000, 1)} h`;
}

/** One field's value as text or elements. */
export function fieldValue(k, v) {
  if (v === null || v === undefined) return h('span.muted', null, '—');
  if (isTime(k, v)) return h('time', {datetime: new Date(v).toISOString(), title: `${v} ms`}, fmtTime(v));
  if (typeof v === 'number') return fmtNum(v, 3);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) {
    return v.length ? v.map(String).join(', ') : h('span.muted', null, 'none');
  }
  return h('code', null, clip(JSON.stringify(v), 300));
}

export function fields(obj, skip = []) {
  const keys = Object.keys(obj).filter((k) => !skip.includes(k));
  if (!keys.length) return null;
  return h('dl', null, keys.map((k) => [h('dt', null, label(k)), h('dd', {dataset: {field: k}}, fieldValue(k, obj[k]))]));
}

function when(v) {
  if (!v.start_ms) return null;
  const span = v.end_ms && v.end_ms !== v.start_ms ? ` → ${fmtTime(v.end_ms)} (${duration(v.end_ms - v.start_ms)})` : '';
  return h('p.muted.when', null, fmtTime(v.start_ms), span);
}

function episode(v) {
  return h('div.value-view#value-episode', {dataset: {kind: 'episode'}},
    h('p.statement', null, `Episode${v.title ? `: ${v.title}` : ''}`,
      v.outcome ? [' · ', h('span.outcome', {dataset: {outcome: v.outcome}}, v.outcome)] : null),
    when(v),
    h('h3', null, `Steps (${v.steps.length})`),
    h('ol.steps', null, v.steps.map((x) => h('li', null, typeof x === 'string' ? x : JSON.stringify(x)))),
    fields(v, ['steps', 'title', 'outcome', 'start_ms', 'end_ms']));
}

function evidence(ev) {
  if (!ev.length) return h('p.muted', null, 'no evidence recorded');
  return h('ul.evidence', null, ev.map((x) => h('li', {dataset: {stance: x.stance}},
    h('span.stance', {dataset: {stance: x.stance}}, x.stance || 'evidence'), ' ',
    x.scope && x.entry ? entryLink(x.scope, x.entry, clip(x.text || x.claim || x.entry, 110))
      : clip(x.text || x.claim || String(x.entry || ''), 110),
    h('span.muted', null, [x.agent ? ` — ${x.agent}` : '', x.at ? `, ${fmtTime(x.at)}` : '',
      x.weight !== undefined ? `, weight ${fmtNum(x.weight, 2)}` : ''].join('')))));
}

function belief(v, e) {
  const c = v.confidence_components || {};
  return h('div.value-view#value-belief', {dataset: {kind: 'belief'}},
    h('p.statement', null, v.negated ? 'not: ' : '', v.statement),
    h('p', null, h('span.status', {dataset: {status: v.status}}, v.status || ''),
      v.revision ? ` · ${v.revision}` : '', v.belief_kind ? ` · ${v.belief_kind.replace(/_/g, ' ')}` : '',
      v.valid_from_ms ? ` · believed since ${fmtTime(v.valid_from_ms)}` : '',
      v.revalidation_due_ms ? ` · to check again by ${fmtTime(v.revalidation_due_ms)}` : ''),
    v.confidence !== undefined ? bar('confidence', v.confidence) : null,
    c.source_count !== undefined ? h('p.muted', null,
      `${plural(c.source_count, 'source')} from ${plural(c.agents, 'agent')}; support ` +
      `${fmtNum(c.support_weight, 2)} against ${fmtNum(c.contradiction_weight, 2)}`) : null,
    h('h3', null, `Evidence (${(v.evidence || []).length})`), evidence(v.evidence || []),
    v.supersedes ? h('p', null, 'supersedes ', entryLink(e.scope, v.supersedes)) : null);
}

function procedure(v) {
  return h('div.value-view#value-procedure', {dataset: {kind: 'procedure'}},
    h('p.statement', null, v.name || `${v.task_kind || 'task'} procedure`,
      h('span.muted', null, ` · ${v.status || ''} · v${v.procedure_version ?? 1}`)),
    v.description ? h('p', null, v.description) : null,
    h('h3', null, `Steps (${v.steps.length})`),
    h('ol.steps', null, v.steps.map((x) => h('li', null, String(x)))),
    bar('success rate', v.success_rate),
    h('p.muted', null, `${pct(v.success_rate)} succeeded: ${v.successes} of ${plural(v.support, 'run')} ` +
      `(${v.failures} failed)`),
    (v.variants || []).length > 1 ? [h('h3', null, `Variants (${v.variants.length})`),
      h('ul.variants', null, v.variants.map((x) => h('li', null, x.steps.join(' → '),
        h('span.muted', null, ` — ${plural(x.support, 'run')}, ${pct(x.success_rate)} succeeded`))))] : null);
}

function summary(v) {
  return h('div.value-view#value-summary', {dataset: {kind: 'summary'}},
    h('p', null, v.text), when(v),
    fields(v, ['text', 'sentences', 'start_ms', 'end_ms']));
}

function pct(x) {
  return x === null || x === undefined ? '?' : `${Math.round(100 * x)}%`;
}

/** "1 agent", "2 agents" (never "1 agents"); many: the irregular plural. */
export function plural(n, one, many) {
  return `${n ?? '?'} ${n === 1 ? one : many || `${one}s`}`;
}

/** The value of entry e as people read it (its kind from its shape). */
export function valueView(e) {
  const v = e.value;
  if (typeof v === 'string') return h('div.value-view', {dataset: {kind: 'text'}}, h('p', null, v));
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    return h('div.value-view', {dataset: {kind: 'other'}}, fieldValue('value', v));
  }
  if (typeof v.statement === 'string') return belief(v, e);
  if (Array.isArray(v.steps) && v.success_rate !== undefined) return procedure(v);
  if (Array.isArray(v.steps)) return episode(v);
  if (typeof v.text === 'string' && Object.keys(v).length > 1) return summary(v);
  if (typeof v.text === 'string') return h('div.value-view', {dataset: {kind: 'text'}}, h('p', null, v.text));
  return h('div.value-view', {dataset: {kind: 'fields'}}, fields(v));
}

/** The raw JSON of anything, behind a toggle. */
export function rawToggle(value, id) {
  return h('details.raw-toggle', null, h('summary', null, 'raw JSON'),
    h(id ? `pre#${id}` : 'pre', null, typeof value === 'string' ? value : JSON.stringify(value, null, 2)));
}
