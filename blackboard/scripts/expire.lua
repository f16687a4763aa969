-- expire.lua: sweep one scope: remove entries whose TTL has passed and publish `expired`.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES, PTTL, PPRUNE,
--   prefix..'e:'..id, prefix..'tag:'..tag.
-- ARGV: [1] scope id, [2] at most this many entries, [3] dry run ('1' = only count).
-- Returns: {removed count, due count}; the scope's score in the partition ttl zset is
--   moved to its next expiry (or removed when none is left).

local scope, limit = ARGV[1], tonumber(ARGV[2])
do local bad = check_scope(scope); if bad then return bad end end
local cfg = load_cfg(CFG)
local now = now_ms()
local due = redis.call('ZCOUNT', KEYS[5], '-inf', now)
if ARGV[3] == '1' then return {0, due} end
local ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
want_scope_types()
for _, id in ipairs(ids) do want_entry_types(id) end
local n = 0
for _, id in ipairs(ids) do
  if remove_entry(cfg, id, 'expired', now, scope, 'expired') then n = n + 1
  else redis.call('ZREM', KEYS[5], id) end
end
reschedule_ttl(scope)
return {n, due}
