#!lua
-- reinforce.lua: boost an entry's strength (memory-pool reinforcement) and slow its decay.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES, PTTL, PPRUNE,
--   prefix..'e:'..id.
-- ARGV: [1] entry id, [2] scope id, [3] reinforcing agent id, [4] boost, [5] max strength.
-- Returns: {strength after, reinforcements after, version}; strength is the decayed
--   strength at this moment plus the boost, capped at max strength.
-- Errors: 'NOT_FOUND <id>'.

local id, scope, agent = ARGV[1], ARGV[2], ARGV[3]
do local bad = check_scope(scope); if bad then return bad end end
local boost, cap = tonumber(ARGV[4]), tonumber(ARGV[5])
local ekey = KEYS[1] .. 'e:' .. id
local cfg = load_cfg(CFG)
local now = now_ms()
want_type(ekey, 'hash')
local cur = redis.call('HMGET', ekey, 'strength', 'strength_at', 'reinforcements',
  'reinforced_by', 'version', 'tags', 'expires_at', 'retired')
if not cur[5] or cur[8] then return redis.error_reply('NOT_FOUND ' .. id) end
local exp_at = tonumber(cur[7])
if exp_at > 0 and exp_at <= now then return redis.error_reply('NOT_FOUND ' .. id) end
want_scope_types()
local k = tonumber(cur[3])
local s = strength_now(cfg, tonumber(cur[1]), tonumber(cur[2]), k, now)
s = math.min(cap, s + boost)
k = k + 1
local by = cjson.decode(cur[4])
local seen = false
for _, a in ipairs(by) do if a == agent then seen = true end end
if not seen and agent ~= '' then by[#by + 1] = agent end
local by_json = '[]'
if #by > 0 then by_json = cjson.encode(by) end
local version = tonumber(cur[5]) + 1
redis.call('HSET', ekey, 'strength', tostring(s), 'strength_at', now, 'reinforcements', k,
  'reinforced_by', by_json, 'version', version, 'updated_at', now)
local escore = evict_score(cfg, s, now, k)
redis.call('ZADD', KEYS[6], escore, id)
local ev = emit(cfg, 'reinforced', id, version, cur[6], now, scope)
redis.call('HSET', ekey, 'last_event_id', ev)
return {tostring(s), k, version}
