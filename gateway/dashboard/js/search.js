// The header's search box and its results view (#/search?q=…): one recall over every scope
// the token may read, each hit a link to the entry view; the recall explorer takes over
// for filters and score components.
import {api, query} from './api.js';
import {h, fill, fmtTime, fmtNum, clip, entryLink, levelOf} from './dom.js';

/** The header's form: submitting goes to the search view with the text in the URL. */
export function searchBox() {
  const input = h('input#global-search', {type: 'search', name: 'q', placeholder: 'Search memory…',
    'aria-label': 'search memory', autocomplete: 'off', maxlength: 500});
  const form = h('form.search', {role: 'search', onsubmit: (e) => {
    e.preventDefault();
    const v = input.value.trim();
    if (v) location.hash = `#/search?q=${encodeURIComponent(v)}`;
  }}, input);
  // the box shows what the search view shows (a shared link, the back button)
  const sync = () => {
    const m = /^#\/search\?(.*)$/.exec(location.hash);
    if (m) input.value = new URLSearchParams(m[1]).get('q') || '';
  };
  window.addEventListener('hashchange', sync);
  sync();
  return form;
}

// Why a row sits above a higher score (gateway/dash/search.py): the newest statement on a
// thing ranks first, and a fact ranks by its best-ranked form while it shows as written.
function placed(x, i, hits) {
  if (!hits.slice(i + 1).some((y) => y.score > x.score)) return null;
  if (x.newer_than) return h('div.hit-moved', null, '↑ the newest statement on this thing ranks first');
  if ((x.also_in || []).length) {
    return h('div.hit-moved', null, `↑ placed by a higher-scoring form of it (in ${x.also_in.join(', ')}); ` +
      'the score is this entry\'s own');
  }
  return null;
}

function hitRow(x, i, hits) {
  return h('li.hit.search-hit', {dataset: {id: x.id, scope: x.scope, score: x.score}},
    h('div.hit-head', null, entryLink(x.scope, x.id, clip(x.text || x.id, 160)),
      h('span.score', {title: 'recall score of the entry shown'}, fmtNum(x.score, 2))),
    h('div.hit-scope', null, h('span.level', null, levelOf(x.scope)), ' · ', x.scope, ' · ',
      h('span.when', null, fmtTime(x.created_at))),
    placed(x, i, hits),
    x.tags.length ? h('div.tags', null, x.tags.map((t) => h('span.tag', null, t))) : null);
}

export default function searchView(root, ctx) {
  const q = (ctx.params.get('q') || '').trim();
  const out = h('div#search-results');
  fill(root, h('h1', null, 'Search'), out);
  if (!q) {
    fill(out, h('p.muted', null, 'Type in the box at the top: every scope this token may ' +
      'read is searched.'));
    ctx.ready();
    return null;
  }
  let stopped = false;
  fill(out, h('p.muted', null, `Searching for “${q}”…`));
  api(`/v1/dashboard/search${query({q, limit: 20})}`).then((r) => {
    if (stopped) return;
    const more = `#/recall?q=${encodeURIComponent(JSON.stringify({query: q, max_results: 20}))}`;
    fill(out,
      h('p.summary#search-summary', null,
        `${r.hits.length} ${r.hits.length === 1 ? 'hit' : 'hits'} for “${q}” across ` +
        `${r.scopes} ${r.scopes === 1 ? 'scope' : 'scopes'} · `,
        h('a#search-explore', {href: more}, 'open in the recall explorer')),
      r.hits.length ? h('ol.hits', null, r.hits.map(hitRow))
        : h('p.muted', null, 'Nothing matched. Fewer or other words may find it.'));
    ctx.ready();
  }, (e) => { if (!stopped) ctx.fail(e); });
  return {dispose() { stopped = true; }};
}
