// View 5, beliefs and skills: semantic facts with their evidence (support, contradict,
// context), confidence components and the supersession chain over time; learned
// procedures with their steps, support and success rate; "as of" an instant, each fact as
// it was believed then (GET /v1/dashboard/beliefs?as_of=).
import {api} from './api.js';
import {h, fill, bar, fmtNum, fmtTime, clip, entryLink} from './dom.js';
import {throttle} from './live.js';
import {plural} from './values.js';

const COMPONENTS = ['balance', 'count_score', 'diversity', 'recency'];

function evidenceList(ev) {
  if (!ev.length) return h('p.muted', null, 'no evidence recorded');
  return h('ul.evidence', null, ev.map((x) => h('li', {dataset: {stance: x.stance}},
    h('span.stance', {dataset: {stance: x.stance}}, x.stance), ' ',
    x.scope ? entryLink(x.scope, x.entry, clip(x.text || x.claim || x.entry, 90))
      : h('span.muted', null, clip(x.claim || x.entry, 90)),
    x.agent ? h('span.muted', null, ` — ${x.agent}`) : null,
    x.weight ? h('span.muted', null, ` w=${fmtNum(x.weight, 2)}`) : null)));
}

function factCard(f) {
  const c = f.current;
  const comp = c.confidence_components || {};
  return h('article.fact', {dataset: {key: f.key, scope: f.scope}},
    h('div.fact-head', null, entryLink(f.scope, c.id, c.statement),
      h('span.status', {dataset: {status: c.status}}, c.status),
      h('span.conf', null, `confidence ${fmtNum(c.confidence, 2)}`)),
    h('div.hit-scope', null, f.scope),
    h('div.bars', null, COMPONENTS.map((k) => bar(k, comp[k])),
      h('p.muted', null, `${plural(comp.source_count, 'source')} from ${plural(comp.agents, 'agent')}; `,
        `support ${fmtNum(comp.support_weight, 2)} vs contradiction ${fmtNum(comp.contradiction_weight, 2)}`)),
    h('details', null, h('summary', null, `evidence (${c.evidence.length})`), evidenceList(c.evidence)),
    f.chain.length > 1 ? h('details.chain', {open: true}, h('summary', null, `history (${f.chain.length} versions)`),
      h('ol', null, f.chain.map((x) => h('li', {dataset: {status: x.status}},
        fmtTime(x.created_at), ' ', entryLink(f.scope, x.id, x.statement),
        ` · ${x.revision} · ${x.status} · ${fmtNum(x.confidence, 2)}`)))) : null);
}

function procCard(p) {
  const rate = p.success_rate;
  return h('article.proc', {dataset: {key: p.key}},
    h('div.fact-head', null, entryLink(p.scope, p.id, p.name || `${p.task_kind} procedure`),
      h('span.conf', null, `support ${p.support} · v${p.procedure_version}`)),
    h('div.hit-scope', null, p.scope),
    h('ol.steps', null, p.steps.map((s) => h('li', null, s))),
    bar('success rate', rate),
    h('p.muted', null, `${p.successes} succeeded, ${p.failures} failed` +
      (p.description ? ` — ${p.description}` : '')));
}

// "As of": each fact as it was believed at an instant (UTC, to the millisecond); empty is
// now (and live). A refused instant (in the future) is said next to the field.
function asOfForm(onChange) {
  const input = h('input', {type: 'datetime-local', name: 'as_of', step: '0.001'});
  const err = h('span.as-of-error.muted');
  const form = h('form.as-of', {onsubmit: (e) => { e.preventDefault(); onChange(input.value); }},
    h('label', null, h('span', null, 'as of (UTC) '), input), ' ',
    h('button', {type: 'submit'}, 'show'), ' ',
    h('button', {type: 'button', onclick: () => { input.value = ''; onChange(''); }}, 'now'),
    ' ', err);
  return {form, err};
}

export default function beliefsView(root, ctx) {
  const facts = h('div#facts');
  const procs = h('div#procedures');
  let asOf = '';
  const {form, err} = asOfForm((v) => { asOf = v; load(); });
  fill(root, h('h1', null, 'Beliefs & skills'), form,
    h('div.grid2', null, h('section', null, h('h2', null, 'Facts'), facts),
      h('section', null, h('h2', null, 'Procedures'), procs)));
  let stopped = false;
  const load = async () => {
    const at = asOf;
    try {
      const d = await api('/v1/dashboard/beliefs' +
        (at ? `?as_of=${encodeURIComponent(at.length === 16 ? at + ':00' : at)}Z` : ''));
      if (stopped || at !== asOf) return;
      fill(err);
      fill(facts, d.facts.length ? d.facts.map(factCard) : h('p.muted', null, 'no facts learned yet'));
      fill(procs, d.procedures.length ? d.procedures.map(procCard) : h('p.muted', null, 'no procedures learned yet'));
      root.dataset.asOf = at;  // what the page shows (tests wait on it)
      ctx.ready();
    } catch (e) {
      if (stopped) return;
      if (at) fill(err, e.message || String(e)); else ctx.fail(e);
    }
  };
  load();
  // Live only for now: a past instant's beliefs do not change.
  const refresh = throttle(() => { if (!stopped && !asOf) load(); }, 1000);
  const off = ctx.hub.on((ev) => { if (/semantic|procedural/.test(ev.scope)) refresh(); });
  return {dispose() { stopped = true; off(); }};
}
