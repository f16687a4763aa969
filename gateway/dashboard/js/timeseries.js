// Line charts over time as plain SVG, drawn at the box's own pixel width (so text keeps its
// size on a phone): a time axis with clock labels, the y range from 0 to the peak, one line
// per series (a null breaks the line), and the newest value of each in the legend.
import {h} from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
export const SERIES_COLORS = ['#2f6fdf', '#e07b39', '#2e8b57', '#c0392b', '#7a4fb3'];

function el(name, attrs, textContent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (textContent !== undefined) e.textContent = textContent;
  return e;
}

function clock(ms, seconds) {
  return new Date(ms).toISOString().slice(11, seconds ? 19 : 16);
}

export function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (Math.abs(v) >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (Math.abs(v) >= 1e4) return `${(v / 1e3).toFixed(0)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 2 : 1);
}

/** An <svg> of series [{name, values, color}] over times t (ms), width px wide. */
export function lineChart(t, series, width, height = 150) {
  const w = Math.max(200, Math.floor(width));
  const padL = 44;
  const padR = 8;
  const padT = 8;
  const padB = 20;
  const svg = el('svg', {width: w, height, viewBox: `0 0 ${w} ${height}`, role: 'img',
    class: 'timeseries'});
  const vals = series.flatMap((s) => s.values.filter((v) => v !== null && v !== undefined));
  const peak = Math.max(1, ...vals);
  const t0 = t.length ? t[0] : 0;
  const t1 = t.length > 1 ? t[t.length - 1] : t0 + 1;
  const x = (ms) => padL + ((ms - t0) / (t1 - t0 || 1)) * (w - padL - padR);
  const y = (v) => padT + (1 - v / peak) * (height - padT - padB);
  svg.appendChild(el('line', {x1: padL, y1: y(0), x2: w - padR, y2: y(0), class: 'axis'}));
  svg.appendChild(el('line', {x1: padL, y1: y(peak), x2: w - padR, y2: y(peak), class: 'grid'}));
  svg.appendChild(el('text', {x: padL - 4, y: y(peak) + 4, 'text-anchor': 'end', class: 'tick'},
    fmtValue(peak)));
  svg.appendChild(el('text', {x: padL - 4, y: y(0) + 4, 'text-anchor': 'end', class: 'tick'}, '0'));
  if (t.length) {
    const short = t1 - t0 < 600_000;  // under ten minutes: the seconds tell the span
    svg.appendChild(el('text', {x: padL, y: height - 4, class: 'tick'}, clock(t0, short)));
    svg.appendChild(el('text', {x: w - padR, y: height - 4, 'text-anchor': 'end', class: 'tick'},
      `${clock(t1, short)} UTC`));
  }
  series.forEach((s, k) => {
    let d = '';
    let pen = false;
    s.values.forEach((v, i) => {
      if (v === null || v === undefined) { pen = false; return; }
      d += `${pen ? 'L' : 'M'}${x(t[i]).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    if (d) {
      svg.appendChild(el('path', {d, fill: 'none', stroke: s.color || SERIES_COLORS[k],
        'stroke-width': 2, 'stroke-linejoin': 'round', class: 'series', 'data-series': s.name}));
    }
  });
  if (t.length < 2) {
    svg.appendChild(el('text', {x: w / 2, y: height / 2, 'text-anchor': 'middle', class: 'tick'},
      'collecting samples…'));
  }
  return svg;
}

/** The legend: each series' colour, name and newest value. */
export function legend(series) {
  return h('div.legend', null, series.map((s, k) => {
    const last = [...s.values].reverse().find((v) => v !== null && v !== undefined);
    return h('span', {dataset: {series: s.name, last: last ?? ''}},
      h('i', {style: {background: s.color || SERIES_COLORS[k]}}), `${s.label || s.name} `,
      h('b', null, fmtValue(last)));
  }));
}
