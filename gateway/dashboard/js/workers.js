// View 6, workers (operator only): live workers with roles, leases and partitions,
// consumer-group lag and pending per partition, dead letters with their reason, and a
// confirmed re-drive that the gateway records as an audit event.
import {api, query} from './api.js';
import {h, fill, fmtAgo, fmtTime, table} from './dom.js';
import {plural} from './values.js';

const POLL_MS = 2000;

function workersTable(d) {
  return table(['worker', 'role', 'pid', 'host', 'partitions', 'leases', 'beat', 'events', 'dlq'],
    d.workers.map((w) => [w.id, w.role, String(w.pid), w.host, w.partitions.join(',') || '—',
      String(d.leases.filter((l) => l.holder === w.id).length), fmtAgo(w.beat_at, d.now),
      String(w.counters.events || 0), String(w.counters.dead_lettered || 0)]));
}

function partitionsTable(d) {
  const rows = [];
  for (const b of d.partitions) {
    if (!b.groups.length) rows.push([String(b.partition), String(b.length), String(b.inbox), String(b.dlq), '—', '', '', '', '']);
    b.groups.forEach((g, i) => {
      const lease = d.leases.find((l) => l.role === g.role && l.partition === b.partition);
      // the age of the reader's last progress (a read returned, a batch settled)
      const pr = (d.progress || []).find((x) => x.role === g.role && x.partition === b.partition);
      rows.push([i ? '' : String(b.partition), i ? '' : String(b.length), i ? '' : String(b.inbox),
        i ? '' : String(b.dlq), g.role, String(g.consumers), String(g.pending),
        g.lag === null ? '?' : String(g.lag), lease ? `${lease.holder}${lease.live ? '' : ' (lapsed)'}` : 'free',
        pr ? fmtAgo(d.now - pr.age_ms, d.now) : '—']);
    });
  }
  return table(['partition', 'bus', 'inbox', 'dlq', 'group', 'consumers', 'pending', 'lag', 'lease',
    'last progress'], rows);
}

export default function workersView(root, ctx) {
  if (!ctx.me.operator) {
    fill(root, h('h1', null, 'Workers'), h('p.error', null, 'Operator token required.'));
    ctx.ready();
    return null;
  }
  const top = h('div#workers');
  const dlq = h('div#dlq');
  const audit = h('div#audit');
  fill(root, h('h1', null, 'Workers'), top, h('h2', null, 'Dead letters'), dlq,
    h('h2', null, 'Re-drive audit'), audit);
  let stopped = false;

  const redrive = async (item) => {
    if (!window.confirm(`Re-drive event ${item.event_id} (${item.type} ${item.entry}) of partition ` +
      `${item.partition} to the bus? Every group reads it again.`)) return;
    try {
      await api('/v1/dashboard/dlq/redrive', {method: 'POST',
        body: {partition: item.partition, id: item.id, confirm: true}});
    } catch (e) { window.alert(e.message); }
    load();
  };

  const load = async () => {
    try {
      const [d, dl, au] = await Promise.all([api('/v1/dashboard/workers'),
        api(`/v1/dashboard/dlq${query({limit: 100})}`), api('/v1/dashboard/audit')]);
      if (stopped) return;
      const t = d.totals;
      fill(top, h('p.summary', null, `${plural(d.workers.length, 'live worker')}; ${plural(d.partitions.length, 'partition')}; `,
        `pending ${t.pending}, lag ${t.lag}, inbox ${t.inbox}, dead letters ${t.dlq}`),
      h('div.scroll', null, workersTable(d)), h('h2', null, 'Partitions, groups and leases'),
      h('div.scroll', null, partitionsTable(d)));
      fill(dlq, dl.items.length ? h('div.scroll', null, table(
        ['at', 'partition', 'group', 'event', 'scope', 'entry', 'deliveries', 'reason', ''],
        dl.items.map((x) => [fmtTime(x.dead_at), String(x.partition), x.group, `${x.type} v${x.version}`,
          x.scope, x.entry, String(x.deliveries), x.reason,
          h('button.redrive', {onclick: () => redrive(x), dataset: {id: x.id}}, 're-drive')])))
        : h('p.muted', null, 'no dead letters'));
      fill(audit, au.items.length ? h('div.scroll', null, table(
        ['at', 'by', 'action', 'partition', 'dead letter', 'new bus id'],
        au.items.map((a) => [fmtTime(a.at), a.by, a.action, String(a.partition), a.dlq_id, a.bus_id])))
        : h('p.muted', null, 'no re-drives yet'));
      ctx.ready();
    } catch (e) { if (!stopped) ctx.fail(e); }
  };
  load();
  const timer = setInterval(load, POLL_MS);
  return {dispose() { stopped = true; clearInterval(timer); }};
}
