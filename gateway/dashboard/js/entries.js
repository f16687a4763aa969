// A scope's entries, newest first, a page at a time with a text filter (#/entry/<scope>?q=…):
// the gateway pages by cursor (entries written meanwhile do not shift the pages) and a
// filtered page looks at a bounded number of entries, saying how many it looked at.
import {api, query} from './api.js';
import {h, fill, fmtTime, fmtNum, text, clip, entryLink, table} from './dom.js';
import {throttle} from './live.js';

const SIZES = [25, 50, 100];

export default function entriesView(root, ctx) {
  const scope = ctx.args[0];
  const st = {q: ctx.params.get('q') || '', size: Number(ctx.params.get('size')) || 50,
    cursors: [null]};  // the cursor of each page shown so far: back is a pop
  if (!SIZES.includes(st.size)) st.size = 50;
  const input = h('input', {type: 'search', name: 'filter', value: st.q, maxlength: 200,
    placeholder: 'text, tag or key contains', 'aria-label': 'filter entries'});
  const size = h('select', {name: 'size', 'aria-label': 'page size'},
    SIZES.map((n) => h('option', {value: n, selected: n === st.size}, `${n} a page`)));
  const summary = h('p.summary#entries-summary');
  const body = h('div.scroll#entries-table');
  const newer = h('button.pager#page-newer', {type: 'button'}, '← newer');
  const older = h('button.pager#page-older', {type: 'button'}, 'older →');
  fill(root, h('h1', null, 'Entries of ', h('code', null, scope)),
    h('form.filters', {onsubmit: (e) => e.preventDefault()}, input, size),
    summary, body, h('div.pager-row', null, newer, older));
  let stopped = false;
  let next = null;
  let seq = 0;

  const load = async () => {
    const mine = ++seq;
    const cursor = st.cursors[st.cursors.length - 1];
    const qs = new URLSearchParams(Object.entries({q: st.q, size: st.size === 50 ? '' : st.size})
      .filter(([, v]) => v)).toString();
    history.replaceState(null, '', `#/entry/${encodeURIComponent(scope)}${qs ? '?' + qs : ''}`);
    try {
      const d = await api(`/v1/dashboard/scopes/${encodeURIComponent(scope)}/entries` +
        query({limit: st.size, cursor, q: st.q}));
      if (stopped || mine !== seq) return;
      next = d.next;
      const first = (st.cursors.length - 1) * st.size;
      const shown = d.entries.length;
      fill(summary, shown ? `${st.q ? 'matching ' : ''}entries ${first + 1}–${first + shown}` : 'no entries',
        st.q ? ` · looked at ${d.scanned}` : '',
        d.next && st.q && shown < st.size ? ' (the page stops at a bound: older ones may match)' : '');
      fill(body, shown ? table(['created', 'entry', 'tags', 'strength'], d.entries.map((e) => [
        fmtTime(e.created_at), entryLink(e.scope, e.id, clip(text(e.value), 100)),
        h('span.tags', null, e.tags.slice(0, 6).join(' ')), fmtNum(e.strength, 2)]))
        : h('p.muted', null, st.q ? `nothing here contains “${st.q}”` : 'this scope is empty'));
      newer.disabled = st.cursors.length <= 1;
      older.disabled = !d.next;
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  const restart = () => { st.cursors = [null]; load(); };
  let typing = null;
  input.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => { st.q = input.value.trim(); restart(); }, 250);
  });
  size.addEventListener('change', () => { st.size = Number(size.value); restart(); });
  older.addEventListener('click', () => { if (next) { st.cursors.push(next); load(); } });
  newer.addEventListener('click', () => { if (st.cursors.length > 1) { st.cursors.pop(); load(); } });
  load();
  // Live on the first page only: a later page is a fixed window into the past.
  const refresh = throttle(() => { if (!stopped && st.cursors.length === 1) load(); }, 1000);
  const off = ctx.hub.on((ev) => { if (ev.scope === scope) refresh(); });
  return {dispose() { stopped = true; clearTimeout(typing); off(); }};
}
