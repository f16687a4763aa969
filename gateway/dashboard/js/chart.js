// Events per second by level, stacked, on a canvas: one column per second of the window.
import {RATE_SECONDS} from './live.js';

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
  '#ff9da7', '#9c755f', '#bab0ac'];

export function levelColor(levels, level) {
  return COLORS[Math.max(0, levels.indexOf(level)) % COLORS.length];
}

/** Draw hub.rates (second -> Map(level -> n)) for the last RATE_SECONDS; -> the levels. */
export function drawRates(canvas, rates, now = Date.now()) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 600;
  const hgt = canvas.clientHeight || 160;
  if (canvas.width !== w * dpr) { canvas.width = w * dpr; canvas.height = hgt * dpr; }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, hgt);
  const end = Math.floor(now / 1000);
  const levels = [...new Set([...rates.values()].flatMap((m) => [...m.keys()]))].sort();
  let peak = 1;
  for (const m of rates.values()) {
    let s = 0;
    for (const n of m.values()) s += n;
    peak = Math.max(peak, s);
  }
  const pad = 24;
  const colW = (w - pad) / RATE_SECONDS;
  g.fillStyle = '#888';
  g.font = '11px sans-serif';
  g.fillText(`${peak}/s`, 2, 11);
  g.fillText(`-${RATE_SECONDS / 60} min`, pad, hgt - 2);
  g.fillText('now', w - 24, hgt - 2);
  const plotH = hgt - 16;
  if (!levels.length) {
    g.textAlign = 'center';
    g.fillText(`no events in the last ${RATE_SECONDS / 60} minutes`, w / 2, plotH / 2);
    g.textAlign = 'start';
    return levels;
  }
  for (let i = 0; i < RATE_SECONDS; i++) {
    const m = rates.get(end - RATE_SECONDS + 1 + i);
    if (!m) continue;
    let y = plotH;
    for (const lvl of levels) {
      const n = m.get(lvl) || 0;
      if (!n) continue;
      const bh = (n / peak) * (plotH - 14);
      g.fillStyle = levelColor(levels, lvl);
      g.fillRect(pad + i * colW, y - bh, Math.max(1, colW - 0.5), bh);
      y -= bh;
    }
  }
  return levels;
}
