-- prune.lua: evict one scope's entries whose decayed strength fell below the threshold
-- (mode 'decay', evict score <= now), or the weakest beyond max_entries (mode 'capacity'),
-- publishing `evicted` for each.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES, PTTL, PPRUNE,
--   prefix..'e:'..id, prefix..'tag:'..tag.
-- ARGV: [1] scope id, [2] mode ('decay' | 'capacity'), [3] at most this many entries,
--   [4] dry run ('1' = only count).
-- Returns: {removed count, due count}; each removal is counted in REMOVED ('decayed' or
--   'capacity'). Mode 'decay' moves the scope's score in the
--   partition prune zset to its next eviction time (or removes it). Cost: O(evicted).

local scope, mode, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
do local bad = check_scope(scope); if bad then return bad end end
local cfg = load_cfg(CFG)
local now = now_ms()
local ids
local due
if mode == 'decay' then
  if cfg.decay_rate <= 0 then
    redis.call('ZREM', PPRUNE, scope)
    return {0, 0}
  end
  due = redis.call('ZCOUNT', KEYS[6], '-inf', now)
  if ARGV[4] == '1' then return {0, due} end
  ids = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, limit)
else
  due = 0
  if cfg.max_entries > 0 then due = math.max(0, redis.call('ZCARD', KEYS[2]) - cfg.max_entries) end
  if ARGV[4] == '1' or due == 0 then return {0, due} end
  ids = redis.call('ZRANGE', KEYS[6], 0, math.min(due, limit) - 1)
end
want_scope_types()
for _, id in ipairs(ids) do want_entry_types(id) end
local n = 0
local reason = mode == 'decay' and 'decayed' or 'capacity'
for _, id in ipairs(ids) do
  if remove_entry(cfg, id, 'evicted', now, scope, reason) then n = n + 1
  else redis.call('ZREM', KEYS[6], id) end
end
if n > 0 then reschedule_ttl(scope) end
if mode == 'decay' then
  local first = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
  if first[2] then redis.call('ZADD', PPRUNE, first[2], scope)
  else redis.call('ZREM', PPRUNE, scope) end
end
return {n, due}
