// One event stream per page, shared by every view: a capped history (the page's memory does
// not grow with the write rate) and per-second counts by level for the rate chart.
import {followEvents} from './api.js';
import {levelOf} from './dom.js';

export const HISTORY_CAP = 1000;   // events kept for the flow view
export const RATE_SECONDS = 300;   // the chart's window: the last five minutes

export class LiveHub {
  constructor() {
    this.history = [];           // newest last, at most HISTORY_CAP
    this.total = 0;              // every event seen since the page loaded
    this.seeded = 0;             // older events read from the feeds (seed)
    this.listeners = new Set();
    this.statusListeners = new Set();
    this.status = 'connecting';
    this.rates = new Map();      // second (epoch s) -> Map(level -> count)
    this.abort = null;
  }

  start() {
    this.stop();
    this.abort = new AbortController();
    followEvents((ev) => this.push(ev), (s, d) => this.setStatus(s, d), this.abort.signal);
  }

  stop() {
    if (this.abort) this.abort.abort();
    this.abort = null;
  }

  setStatus(s, detail) {
    this.status = s;
    for (const f of this.statusListeners) f(s, detail);
  }

  push(ev) {
    ev.level = levelOf(ev.scope || '');
    ev.received = Date.now();
    this.total += 1;
    this.history.push(ev);
    if (this.history.length > HISTORY_CAP) this.history.splice(0, this.history.length - HISTORY_CAP);
    this.count(Math.floor(ev.received / 1000), ev.level);
    for (const f of this.listeners) {
      try { f(ev); } catch (e) { console.error(e); }
    }
  }

  /** One event of `level` in the events/s chart's second `sec` (epoch s). */
  count(sec, level) {
    const newest = Math.max(sec, ...this.rates.keys());
    if (sec <= newest - RATE_SECONDS) return;
    let m = this.rates.get(sec);
    if (!m) {
      m = new Map();
      this.rates.set(sec, m);
      for (const k of this.rates.keys()) if (k <= newest - RATE_SECONDS) this.rates.delete(k);
    }
    m.set(level, (m.get(level) || 0) + 1);
  }

  /**
   * Older events from the feeds (GET /v1/dashboard/events/recent), merged into the history
   * by time without counting as seen since the page opened; an event the stream already
   * brought is kept once. -> how many were added.
   */
  seed(evs) {
    const key = (e) => `${e.scope}@${e.id}`;
    const have = new Set(this.history.map(key));
    const add = evs.filter((e) => !have.has(key(e)))
      .map((e) => Object.assign(e, {level: levelOf(e.scope || ''), received: null}));
    if (!add.length) return 0;
    this.history = add.concat(this.history)
      .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (this.history.length > HISTORY_CAP) this.history.splice(0, this.history.length - HISTORY_CAP);
    this.seeded += add.length;
    // The chart shows the last minutes as they were, not only what arrived since the page
    // opened: an older event counts at its own time.
    const since = Date.now() - RATE_SECONDS * 1000;
    for (const e of add) if (e.at >= since) this.count(Math.floor(e.at / 1000), e.level);
    return add.length;
  }

  on(f) {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  onStatus(f) {
    this.statusListeners.add(f);
    return () => this.statusListeners.delete(f);
  }
}

/** Call fn at most once per ms, trailing: bursts of events become one refresh. */
export function throttle(fn, ms) {
  let timer = null;
  let last = 0;
  return (...args) => {
    if (timer) return;
    const wait = Math.max(0, last + ms - Date.now());
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      fn(...args);
    }, wait);
  };
}
