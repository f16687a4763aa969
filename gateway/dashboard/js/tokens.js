// Tokens (#/tokens, operator): every token the gateway issued — id, agent, teams, Redis
// user, created — never a secret. Revoke asks first, in the row; then the gateway removes
// the token's password from its Redis user (as `blackboard token revoke` does), and its
// next request is refused.
import {api} from './api.js';
import {h, fill, fmtTime} from './dom.js';

export default function tokensView(root, ctx) {
  if (!ctx.me.operator) {
    fill(root, h('h1', null, 'Tokens'), h('p.error', null, 'Operator token required.'));
    ctx.ready();
    return null;
  }
  const note = h('p.summary#tokens-summary');
  const msg = h('p#tokens-message', {role: 'status'});
  const list = h('div.scroll#tokens');
  fill(root, h('h1', null, 'Tokens'), note, msg, list);
  let stopped = false;

  const revoke = async (t, cell) => {
    try {
      await api(`/v1/dashboard/tokens/${encodeURIComponent(t.id)}/revoke`,
        {method: 'POST', body: {confirm: true}});
      fill(msg, `Revoked token ${t.id} of ${t.agent}: its requests are refused from now on.`);
      msg.className = 'ok';
    } catch (e) {
      fill(msg, e.message || String(e));
      msg.className = 'error';
      if (cell) fill(cell, actions(t, cell));
      return;
    }
    load();  // this tab's own token revoked: refused here, and the page signs out
  };

  // The confirm step: the row's button becomes a question with its own two buttons.
  const ask = (t, cell) => fill(cell, h('span.confirm', null,
    `Revoke ${t.id}${t.current ? ' (this tab’s own token: you will be signed out)' : ''}? `,
    h('button.danger.confirm-revoke', {type: 'button', onclick: () => revoke(t, cell)}, 'Revoke'), ' ',
    h('button.secondary.cancel-revoke', {type: 'button', onclick: () => fill(cell, actions(t, cell))},
      'Cancel')));
  const actions = (t, cell) => h('button.secondary.revoke', {type: 'button', dataset: {id: t.id},
    onclick: () => ask(t, cell)}, 'revoke…');

  const load = async () => {
    try {
      const d = await api('/v1/dashboard/tokens');
      if (stopped) return;
      fill(note, `${d.tokens.length} tokens. A token is shown once, when created ` +
        '(blackboard token create); here only who holds which.');
      fill(list, d.tokens.length ? h('table#token-table', null,
        h('thead', null, h('tr', null, ['id', 'agent', 'teams', 'kind', 'Redis user', 'created', '']
          .map((x) => h('th', null, x)))),
        h('tbody', null, d.tokens.map((t) => {
          const cell = h('td.token-action');
          fill(cell, actions(t, cell));
          const td = (label, ...c) => h('td', {dataset: {label}}, ...c);  // the phone's card labels
          return h('tr', {dataset: {id: t.id, agent: t.agent}},
            td('id', h('code', null, t.id), t.current ? h('span.badge', null, 'this tab') : null),
            td('agent', t.agent), td('teams', t.teams.join(', ') || '—'),
            td('kind', t.operator ? 'operator' : 'agent'), td('Redis user', t.user),
            td('created', fmtTime(t.created)), cell);
        }))) : h('p.muted', null, 'no tokens'));
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  return {dispose() { stopped = true; }};
}
