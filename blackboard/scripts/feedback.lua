#!lua
-- feedback.lua: record one agent's verdict (helpful or misleading) on recalled entries of
-- one scope: the entries' use counts, and the pool's reinforcement for a helpful one.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): CFG, prefix..'e:'..id,
--   BASE..':s:agent:<voter>:' (EXISTS only: the proof below).
-- ARGV: [1] scope id, [2] the voting agent's id, [3] verdict '1' helpful / '0' misleading,
--   [4] boost, [5] max strength, [6..] entry ids (at least one; a repeated id counts once).
-- Entry fields: `feedback_by` (JSON object agent -> 1 / 0, each agent's latest verdict),
--   `uses` (agents with a verdict) and `helpful` (agents whose verdict is helpful): counted
--   per agent, so an agent repeating itself changes nothing and can pump no entry. A
--   helpful verdict also reinforces (strength decayed to now plus the boost, capped; one
--   more reinforcement; the voter joins `reinforced_by`) unless the voter is already among
--   the entry's reinforcers: the pool's reinforcement, counted once per agent.
-- Voter: proven as write.lua proves an author: EXISTS on 'bb:{pN}:s:agent:<voter>:' (same
--   slot), which Redis refuses unless the calling user may read that agent's keys (the
--   agent itself or a service user), so nobody votes in another agent's name.
-- Returns: one {id, changed 0/1, reinforced 0/1, uses, helpful, strength} per entry id;
--   a changed entry gets a new version and a 'reinforced' event (its readers re-read it).
-- Errors: 'NOT_FOUND <id>' (no live entry), 'NOT_AUTHOR <voter>', 'BAD_AUTHOR <voter>',
--   'WRONG_TYPE <key> ...', 'FEED_EXHAUSTED <feed>'. All reads and checks come first: a
--   refused call writes nothing, for any of its entries.

local scope, voter, verdict = ARGV[1], ARGV[2], tonumber(ARGV[3])
do local bad = check_scope(scope); if bad then return bad end end
if #voter == 0 or #voter > 64 or not string.match(voter, '^[%w_.%-]+$') then
  return redis.error_reply('BAD_AUTHOR ' .. string.sub(voter, 1, 80))
end
local proof = redis.pcall('EXISTS', BASE .. ':s:agent:' .. voter .. ':')
if type(proof) == 'table' and proof.err then
  return redis.error_reply('NOT_AUTHOR ' .. voter)
end
local boost, cap = tonumber(ARGV[4]), tonumber(ARGV[5])
local cfg = load_cfg(CFG)
local now = now_ms()

-- A JSON field the owner may have mangled with raw commands reads as empty (decoding it
-- later could fail after a write).
local function decoded(raw, empty)
  if not raw or raw == '' then return empty end
  local ok, v = pcall(cjson.decode, raw)
  if ok and type(v) == 'table' then return v end
  return empty
end

-- 1. Read and check every entry.
local seen, dup = {}, {}
for i = 6, #ARGV do
  local id = ARGV[i]
  if not dup[id] then
    dup[id] = true
    local ekey = KEYS[1] .. 'e:' .. id
    want_type(ekey, 'hash')
    local cur = redis.call('HMGET', ekey, 'strength', 'strength_at', 'reinforcements',
      'reinforced_by', 'version', 'tags', 'expires_at', 'retired', 'feedback_by')
    if not cur[5] or cur[8] then return redis.error_reply('NOT_FOUND ' .. id) end
    local exp_at = tonumber(cur[7]) or 0
    if exp_at > 0 and exp_at <= now then return redis.error_reply('NOT_FOUND ' .. id) end
    seen[#seen + 1] = {id = id, key = ekey, cur = cur,
      votes = decoded(cur[9], {}), by = decoded(cur[4], {})}
  end
end
want_scope_types()

-- 2. Write.
local out = {}
for _, e in ipairs(seen) do
  local cur, votes, by = e.cur, e.votes, e.by
  local changed, reinforced = 0, 0
  local s = tonumber(cur[1]) or 1
  local s_at = tonumber(cur[2]) or now
  local k = tonumber(cur[3]) or 0
  if votes[voter] ~= verdict then
    changed = 1
    votes[voter] = verdict
  end
  local known = false
  for _, a in ipairs(by) do if a == voter then known = true end end
  if verdict == 1 and not known then
    reinforced = 1
    s = math.min(cap, strength_now(cfg, s, s_at, k, now) + boost)
    s_at = now
    k = k + 1
    by[#by + 1] = voter
  else
    s = strength_now(cfg, s, s_at, k, now)
  end
  local uses, helpful = 0, 0
  for _, v in pairs(votes) do
    uses = uses + 1
    if v == 1 then helpful = helpful + 1 end
  end
  if changed == 1 or reinforced == 1 then
    local version = (tonumber(cur[5]) or 1) + 1
    redis.call('HSET', e.key, 'feedback_by', cjson.encode(votes), 'uses', uses,
      'helpful', helpful, 'version', version, 'updated_at', now)
    if reinforced == 1 then
      redis.call('HSET', e.key, 'strength', tostring(s), 'strength_at', s_at,
        'reinforcements', k, 'reinforced_by', cjson.encode(by))
      redis.call('ZADD', KEYS[6], evict_score(cfg, s, s_at, k), e.id)
    end
    local ev = emit(cfg, 'reinforced', e.id, version, cur[6], now, scope)
    redis.call('HSET', e.key, 'last_event_id', ev)
  end
  out[#out + 1] = {e.id, changed, reinforced, uses, helpful, tostring(s)}
end
return out
