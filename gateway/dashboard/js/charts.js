// Charts over time (#/charts): throughput, lag, memory size and dead letters from the
// samples the gateway keeps (GET /v1/dashboard/charts, a bounded ring). An agent token sees
// its own scopes' memory and event rate; the buses, dead letters and workers need an
// operator token. Polled at the gateway's sampling interval while the view is open.
import {api, query} from './api.js';
import {h, fill, fmtNum} from './dom.js';
import {lineChart, legend} from './timeseries.js';

const WINDOWS = [5, 15, 60];

function panels(d) {
  const op = d.operator;
  return [
    {id: 'throughput', title: 'Throughput (events/s)', series: [
      {name: 'events_per_s', label: 'memory events', values: d.events_per_s},
      ...(op ? [{name: 'worker_events_per_s', label: 'handled by workers', values: d.worker_events_per_s},
        {name: 'requests_per_s', label: 'gateway requests', values: d.requests_per_s}] : [])]},
    {id: 'lag', title: 'Lag and backlog (events)', operator: true, series: op ? [
      {name: 'lag', label: 'lag', values: d.lag}, {name: 'pending', label: 'pending', values: d.pending},
      {name: 'inbox', label: 'inbox', values: d.inbox}] : []},
    {id: 'memory', title: 'Memory size (entries)', series: [
      {name: 'entries', label: op ? 'all scopes' : `your ${d.scopes} scopes`, values: d.entries}]},
    {id: 'dead-letters', title: 'Dead letters', operator: true, series: op ? [
      {name: 'dead_letters', label: 'dead letters', values: d.dead_letters}] : []},
  ];
}

function panel(p, d, width) {
  const box = h('section.chart-box.ts', {dataset: {chart: p.id}}, h('h2', null, p.title));
  if (p.operator && !d.operator) {
    box.appendChild(h('p.muted.op-only', null, 'Needs an operator token: the buses, dead letters ' +
      'and workers are the service user’s to read.'));
    return box;
  }
  box.appendChild(lineChart(d.t, p.series, width));
  box.appendChild(legend(p.series));
  return box;
}

export default function chartsView(root, ctx) {
  let minutes = Number(ctx.params.get('minutes')) || 60;
  if (!WINDOWS.includes(minutes)) minutes = 60;
  const pick = h('select', {name: 'minutes', 'aria-label': 'time window'},
    WINDOWS.map((m) => h('option', {value: m, selected: m === minutes}, `last ${m} min`)));
  const summary = h('p.summary#charts-summary');
  const grid = h('div.charts#charts');
  fill(root, h('h1', null, 'Charts'), h('form.filters', {onsubmit: (e) => e.preventDefault()}, pick),
    summary, grid);
  let stopped = false;
  let data = null;
  let timer = null;

  const draw = () => {
    if (!data) return;
    const cols = grid.clientWidth > 700 ? 2 : 1;
    const width = (grid.clientWidth - (cols - 1) * 16) / cols - 22;
    fill(grid, panels(data).map((p) => panel(p, data, width)));
  };
  const load = async () => {
    try {
      const d = await api(`/v1/dashboard/charts${query({minutes})}`);
      if (stopped) return;
      data = d;
      const kept = d.kept_s >= 3600 ? `${fmtNum(d.kept_s / 3600, 1)} h` : `${Math.round(d.kept_s / 60)} min`;
      fill(summary, `${d.t.length} samples, one every ${d.interval_s} s, taken by this gateway ` +
        `process (the last ${kept} are kept)`, d.error ? h('span.error', null, ` · sampling: ${d.error}`) : '');
      draw();
      ctx.ready();
      timer = setTimeout(load, Math.max(2000, d.interval_s * 1000));
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  pick.addEventListener('change', () => {
    minutes = Number(pick.value);
    history.replaceState(null, '', `#/charts?minutes=${minutes}`);
    clearTimeout(timer);
    load();
  });
  const onResize = () => draw();
  window.addEventListener('resize', onResize);
  load();
  return {dispose() { stopped = true; clearTimeout(timer); window.removeEventListener('resize', onResize); }};
}
