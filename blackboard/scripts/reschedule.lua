-- reschedule.lua: set one scope's places in the partition ttl and prune schedules to what
-- its own indexes say is due: the earliest expiry (exp) and, in a decaying scope, the
-- earliest eviction time (evict); removed where nothing is due.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): CFG (HMGET), PTTL, PPRUNE (ZSCORE/ZADD/ZREM).
-- ARGV: [1] scope id, [2] dry run ('1' = only report).
-- Returns: {ttl place changed (0/1), prune place changed (0/1)}.
-- Why: a confined agent must hold ZADD/ZREM on the shared schedules (its writes schedule
-- its scope there), so it can also move another scope's place. Reads never show expired
-- entries whatever the schedules say, but a missing or late place delays the sweep and
-- the pruning of that scope; the maintenance role runs this on every scope, which bounds
-- the delay by its interval. Cost: O(log n) per scope.

local scope, dry = ARGV[1], ARGV[2] == '1'
do local bad = check_scope(scope); if bad then return bad end end
local cfg = load_cfg(CFG)

local function place(key, index, wanted)
  local due = nil
  if wanted then
    local first = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
    if first[2] then due = tonumber(first[2]) end
  end
  local got = redis.call('ZSCORE', key, scope)
  if due == nil then
    if not got then return 0 end
    if not dry then redis.call('ZREM', key, scope) end
    return 1
  end
  if got and tonumber(got) == due then return 0 end
  if not dry then redis.call('ZADD', key, due, scope) end
  return 1
end

return {place(PTTL, KEYS[5], true), place(PPRUNE, KEYS[6], cfg.decay_rate > 0)}
