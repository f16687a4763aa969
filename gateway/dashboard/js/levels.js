// The memory levels, in order, as the gateway names them (GET /v1/dashboard/me carries
// memory.MemoryLevel): one list for every view, never a copy in the page.
export let LEVELS = [];

export function setLevels(levels) {
  LEVELS = Array.isArray(levels) ? levels.slice() : [];
}
