// View 4, the recall explorer: the full MemoryQuery as a form (kept in the URL), the ranked
// hits with each score component as a bar, and how many candidates each hard filter
// excluded. Re-runs (throttled) as memory changes while "live" is on.
import {api} from './api.js';
import {h, fill, bar, fmtNum, text, clip, entryLink} from './dom.js';
import {throttle} from './live.js';
import {LEVELS} from './levels.js';
import {plural} from './values.js';

const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
const toMs = (v) => (v ? new Date(v + 'Z').getTime() : null);
const fromMs = (ms) => (ms ? new Date(ms).toISOString().slice(0, 16) : '');

function formToQuery(form) {
  const v = (n) => form.elements[n].value.trim();
  const q = {query: v('query') || null, max_results: Number(v('max_results')) || 10};
  const levels = LEVELS.filter((l) => form.elements[`level-${l}`].checked);
  if (levels.length) q.levels = levels;
  const tf = {all_of: list(v('all_of')), any_of: list(v('any_of')), none_of: list(v('none_of'))};
  if (tf.all_of.length || tf.any_of.length || tf.none_of.length) q.tag_filter = tf;
  const t0 = toMs(v('from'));
  const t1 = toMs(v('to'));
  if (t0 || t1) q.time_range = [t0 || 0, t1 || 4102444800000];
  if (v('key_pattern')) q.key_pattern = v('key_pattern');
  if (v('min_strength')) q.min_strength = Number(v('min_strength'));
  if (v('scopes')) q.scopes = list(v('scopes'));
  if (v('lens')) q.lens = v('lens');
  if (v('fusion') !== 'convex') q.fusion = v('fusion');
  if (v('alpha')) q.alpha = Number(v('alpha'));
  if (v('mmr')) q.mmr = Number(v('mmr'));
  return q;
}

const EXPERT = ['key_pattern', 'min_strength', 'scopes', 'lens', 'fusion', 'alpha', 'mmr'];

function field(label, input) {
  return h('label', null, h('span', null, label), input);
}

function buildForm(q, onRun) {
  const tf = q.tag_filter || {};
  const inp = (name, value, attrs) => h('input', Object.assign({name, value: value ?? ''}, attrs || {}));
  const form = h('form.recall-form', {onsubmit: (e) => { e.preventDefault(); onRun(formToQuery(form)); }},
    field('query', inp('query', q.query, {placeholder: 'free text'})),
    h('fieldset', null, h('legend', null, 'levels'), LEVELS.map((l) => h('label.inline', null,
      h('input', {type: 'checkbox', name: `level-${l}`, checked: (q.levels || []).includes(l)}), l))),
    field('all of tags', inp('all_of', (tf.all_of || []).join(', '))),
    field('any of tags', inp('any_of', (tf.any_of || []).join(', '))),
    field('none of tags', inp('none_of', (tf.none_of || []).join(', '))),
    field('from (UTC)', inp('from', fromMs(q.time_range && q.time_range[0]), {type: 'datetime-local'})),
    field('to (UTC)', inp('to', fromMs(q.time_range && q.time_range[1]), {type: 'datetime-local'})),
    field('max results', inp('max_results', q.max_results || 10, {type: 'number', min: '1', max: '100'})),
    // The ranking knobs are for someone tuning recall: folded away unless a link sets one.
    h('details.expert', {open: EXPERT.some((k) => q[k] !== undefined && q[k] !== null)},
      h('summary', null, 'ranking and key options'),
      field('key pattern', inp('key_pattern', q.key_pattern, {placeholder: 'fact:*'})),
      field('min strength', inp('min_strength', q.min_strength, {type: 'number', step: '0.05', min: '0'})),
      field('scopes', inp('scopes', (q.scopes || []).join(', '), {placeholder: 'all readable'})),
      field('lens', inp('lens', q.lens, {placeholder: 'e.g. facts'})),
      field('fusion', h('select', {name: 'fusion'}, ['convex', 'rrf'].map((f) =>
        h('option', {value: f, selected: (q.fusion || 'convex') === f}, f)))),
      field('alpha', inp('alpha', q.alpha, {type: 'number', step: '0.05', min: '0', max: '1'})),
      field('mmr λ', inp('mmr', q.mmr, {type: 'number', step: '0.05', min: '0', max: '1'}))),
    h('div.actions', null, h('button', {type: 'submit'}, 'Recall'),
      h('label.inline', null, h('input', {type: 'checkbox', name: 'live', checked: true}), 'live')));
  return form;
}

// A hit that took an earlier statement's place: the earlier one links to its entry when it
// is among the hits (it may live in another scope), and is named by id otherwise.
function moved(x, hits) {
  const was = hits.find((y) => y.entry.id === x.newer_than);
  return h('div.hit-moved', null, '↑ ranked in the place of ',
    was ? entryLink(was.scope, was.entry.id, 'an earlier statement') : `an earlier statement (${x.newer_than})`,
    ' on the same thing: the newest ranks first');
}

function renderHits(el, r) {
  const maxBm25 = Math.max(1, ...r.hits.map((x) => x.components.bm25 || 0));
  const ex = Object.entries(r.excluded || {}).filter(([, n]) => n > 0);
  fill(el,
    h('p.summary#recall-summary', null, `${plural(r.hits.length, 'hit')} from ${plural(r.scopes.length, 'scope')}`,
      r.candidates === null ? '' : `; ${r.candidates} candidates before the hard filters`),
    h('div#excluded', null, h('h2', null, 'Excluded by filters'),
      r.candidates === null
        ? h('p.muted', null, 'counted for text queries (without text every entry is a candidate)')
        : ex.length ? h('ul', null, ex.map(([k, n]) => h('li', {dataset: {filter: k}}, `${k}: ${n}`)))
          : h('p.muted', null, 'no candidate was excluded by a filter')),
    h('ol.hits', null, r.hits.map((x) => h('li.hit', {dataset: {id: x.entry.id}},
      h('div.hit-head', null, entryLink(x.scope, x.entry.id, clip(text(x.entry.value), 140)),
        h('span.score', null, `score ${fmtNum(x.score)}`)),
      h('div.hit-scope', null, x.scope, ' · ', x.entry.tags.slice(0, 6).join(' ')),
      // Why a lower score can rank above a higher one: the newest statement on a thing
      // takes the best place among its statements (retrieval/updates.py).
      x.newer_than ? moved(x, r.hits) : null,
      h('div.bars', null,
        bar('fused', x.components.fused), bar('dense', x.components.dense),
        bar('bm25', x.components.bm25, maxBm25), bar('strength', x.components.strength),
        bar('recency', x.components.recency), bar('importance', x.components.importance))))));
}

export default function recallView(root, ctx) {
  let q = {query: '', max_results: 10};
  try { if (ctx.params.get('q')) q = JSON.parse(ctx.params.get('q')); } catch { /* a bad link: defaults */ }
  const out = h('div#recall-results');
  let stopped = false;
  let asked = false;  // a query was run: live updates re-run it
  const run = async (query, push) => {
    q = query;
    asked = true;
    if (push) history.replaceState(null, '', `#/recall?q=${encodeURIComponent(JSON.stringify(q))}`);
    try {
      const r = await api('/v1/dashboard/recall', {method: 'POST', body: q});
      if (!stopped) renderHits(out, r);
    } catch (e) {
      if (!stopped) fill(out, h('p.error', null, e.message));
    }
    ctx.ready();
  };
  const form = buildForm(q, (query) => run(query, true));
  fill(root, h('h1', null, 'Recall explorer'), h('div.recall', null, form, out));
  if (ctx.params.get('q')) {
    run(q, false);
  } else {
    fill(out, h('p.muted#recall-hint', null, 'Fill in the query and press Recall; the link then ' +
      'carries the whole query.'));
    ctx.ready();
  }
  const off = ctx.hub.on(throttle(() => {
    if (!stopped && asked && form.elements.live.checked) run(q, false);
  }, 2000));
  return {dispose() { stopped = true; off(); }};
}
