// An entry's strength over time (GET /v1/dashboard/entries/{id}: curve, now, policy) on a
// canvas, with a time axis in dates, the strength axis and the eviction threshold.
import {fmtNum} from './dom.js';

function pad(n) { return String(n).padStart(2, '0'); }

/** A tick's label: the time of day for a span under two days, else the date too (UTC). */
export function tickLabel(ms, span) {
  const d = new Date(ms);
  const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  if (span < 3 * 60000) return `${hm}:${pad(d.getUTCSeconds())}`;
  if (span < 2 * 86400000) return hm;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

/** A decay tick (seconds) as people say it: "day", "6 hours", "30 s". */
export function tickText(s) {
  const units = [[86400, 'day'], [3600, 'hour'], [60, 'minute']];
  for (const [n, name] of units) {
    if (s >= n && s % n === 0) return s === n ? name : `${s / n} ${name}s`;
  }
  return `${fmtNum(s, 0)} s`;
}

function color(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

export function drawDecay(canvas, d) {
  const pts = d.curve;
  const w = canvas.clientWidth || 500;
  const hh = canvas.clientHeight || 160;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = w * dpr;
  canvas.height = hh * dpr;
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, hh);
  if (!pts.length) return;
  const left = 34;
  const right = w - 12;
  const top = 8;
  const bottom = hh - 22;
  const t0 = pts[0][0];
  const t1 = Math.max(pts[pts.length - 1][0], t0 + 1);
  const peak = Math.max(1, ...pts.map((p) => p[1]));
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (right - left);
  const y = (v) => bottom - (v / peak) * (bottom - top);
  const muted = color('--muted', '#888');
  const line = color('--line', '#ddd');
  g.font = '11px system-ui, sans-serif';
  g.lineWidth = 1;
  // axes: strength 0 and peak, and five time ticks
  g.strokeStyle = line;
  g.fillStyle = muted;
  g.beginPath(); g.moveTo(left, top); g.lineTo(left, bottom); g.lineTo(right, bottom); g.stroke();
  g.textAlign = 'right';
  g.fillText(fmtNum(peak, 1), left - 4, top + 8);
  g.fillText('0', left - 4, bottom);
  g.textAlign = 'center';
  const ticks = w < 420 ? 3 : 5;
  for (let i = 0; i < ticks; i++) {
    const t = t0 + ((t1 - t0) * i) / (ticks - 1);
    g.beginPath(); g.moveTo(x(t), bottom); g.lineTo(x(t), bottom + 4); g.stroke();
    g.textAlign = i === 0 ? 'left' : i === ticks - 1 ? 'right' : 'center';
    g.fillText(tickLabel(t, t1 - t0), x(t), hh - 6);
  }
  // the eviction threshold
  const thr = d.policy.evict_threshold;
  if (thr !== undefined && thr !== null && d.policy.decay_rate) {
    g.setLineDash([4, 3]);
    g.strokeStyle = muted;
    g.beginPath(); g.moveTo(left, y(thr)); g.lineTo(right, y(thr)); g.stroke();
    g.setLineDash([]);
    g.textAlign = 'right';
    g.fillText(`evicted below ${fmtNum(thr, 2)}`, right, y(thr) - 4);
  }
  g.strokeStyle = color('--accent', '#4e79a7');
  g.lineWidth = 2;
  g.beginPath();
  pts.forEach(([t, v], i) => (i ? g.lineTo(x(t), y(v)) : g.moveTo(x(t), y(v))));
  g.stroke();
  if (d.now >= t0 && d.now <= t1) {
    g.fillStyle = color('--bad', '#e15759');
    g.beginPath(); g.arc(x(d.now), y(d.strength_now), 4, 0, 7); g.fill();
    g.textAlign = 'center';
    g.fillText('now', x(d.now), y(d.strength_now) - 8);
  }
}
