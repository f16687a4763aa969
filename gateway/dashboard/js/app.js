// The dashboard shell: login, navigation, hash routes (each view has a URL to share), the
// shared live event stream, and the first-paint mark each view sets when its data is shown.
import {api, token, ApiError} from './api.js';
import {h, fill} from './dom.js';
import {LiveHub} from './live.js';
import mapView from './map.js';
import eventsView from './events.js';
import entryView from './entry.js';
import recallView from './recall.js';
import beliefsView from './beliefs.js';
import workersView from './workers.js';
import searchView, {searchBox} from './search.js';
import chartsView from './charts.js';
import tokensView from './tokens.js';
import {setLevels} from './levels.js';
import flowView from './flow.js';
import timelineView from './timeline.js';
import {themeToggle} from './theme.js';

const VIEWS = {
  map: mapView, events: eventsView, entry: entryView, recall: recallView,
  beliefs: beliefsView, workers: workersView, flow: flowView,
  search: searchView, charts: chartsView, tokens: tokensView, timeline: timelineView,
};
const NAV = [['map', 'Memory map'], ['flow', 'Dataflow'], ['events', 'Live events'],
  ['entry', 'Entry'], ['timeline', 'Timeline'], ['recall', 'Recall'], ['beliefs', 'Beliefs & skills'],
  ['workers', 'Workers'], ['charts', 'Charts'], ['tokens', 'Tokens']];
const OPERATOR_ONLY = new Set(['workers', 'tokens']);
const TITLES = {search: 'Search'};  // views reached otherwise than by the nav

const hub = new LiveHub();
let me = null;
let current = null;
window.__paint = {};
window.__dashboard = {hub};  // for the browser tests (history cap)

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?');
  const parts = (path || 'map').split('/').map(decodeURIComponent);
  return {name: parts[0] || 'map', args: parts.slice(1), params: new URLSearchParams(qs || '')};
}

function loginView(message) {
  hub.stop();
  document.body.dataset.ready = '';
  const input = h('input#token', {type: 'password', placeholder: 'bbt_…', autocomplete: 'off',
    'aria-label': 'token'});
  const form = h('form.login', {
    onsubmit: (e) => {
      e.preventDefault();
      token.set(input.value.trim());
      boot();
    },
  },
  h('h1', null, 'Reactive Blackboard'),
  h('p', null, 'Paste a token from ', h('code', null, 'blackboard token create'),
    '. It stays in this tab only (sessionStorage).'),
  input, h('button', {type: 'submit'}, 'Sign in'),
  message ? h('p.error', null, message) : null);
  fill(document.getElementById('app'), form);
  input.focus();
}

function shell() {
  const status = h('span#live-status.status', null, hub.status);
  hub.onStatus((s, d) => { status.textContent = s; status.title = d || ''; status.dataset.state = s; });
  const who = `${me.agent}${me.operator ? ' (operator)' : ''}`;
  const nav = h('nav', null, NAV.map(([k, label]) =>
    (OPERATOR_ONLY.has(k) && !me.operator) ? null : h('a', {href: `#/${k}`, dataset: {view: k}}, label)));
  const header = h('header', null,
    h('strong.brand', null, 'Blackboard'), nav, searchBox(),
    h('span.who', null, who, ' · ', status, ' · ', themeToggle(), ' ',
      h('button.link#logout', {onclick: () => { token.clear(); me = null; loginView(); }}, 'sign out')));
  const main = h('main#view');
  fill(document.getElementById('app'), header, main);
  return main;
}

function route() {
  if (!me) return;
  const {name, args, params} = parseHash();
  const view = VIEWS[name] || VIEWS.map;
  const key = VIEWS[name] ? name : 'map';
  if (current && current.dispose) current.dispose();
  current = null;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.view === key);
  const root = document.getElementById('view') || shell();
  fill(root);
  document.body.dataset.view = key;
  document.body.dataset.ready = '';
  const t0 = performance.now();
  const ctx = {
    me, hub, args, params,
    ready: () => {
      if (document.body.dataset.view !== key || document.body.dataset.ready === key) return;
      window.__paint[key] = performance.now() - t0;
      document.body.dataset.ready = key;
    },
    fail: (e) => {
      if (e instanceof ApiError && e.status === 401) { token.clear(); loginView(e.message); return; }
      root.appendChild(h('p.error', null, e.message || String(e)));
      ctx.ready();
    },
  };
  document.title = `${TITLES[key] || NAV.find(([k]) => k === key)[1]} · Blackboard`;
  try {
    current = view(root, ctx) || null;
  } catch (e) {
    ctx.fail(e);
  }
}

async function boot() {
  if (!token.get()) { loginView(); return; }
  try {
    me = await api('/v1/dashboard/me');
    setLevels(me.levels);
  } catch (e) {
    token.clear();
    loginView(e.status === 401 ? 'That token was refused.' : e.message);
    return;
  }
  shell();
  hub.start();
  route();
}

window.addEventListener('hashchange', route);
boot();
