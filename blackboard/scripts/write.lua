-- write.lua: store one entry with its indexes and publish its event, or upsert by key.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): BUS, CFG, PSCOPES, PTTL, PPRUNE,
--   prefix..'e:'..id (entry, and evicted entries),
--   prefix..'tag:'..tag (tag sets of the new and of evicted entries).
-- ARGV: [1] entry id, [2] value (JSON), [3] tags (JSON list), [4] metadata (JSON object),
--   [5] logical key or '', [6] importance, [7] initial strength,
--   [8] ttl ms ('' = scope default, '0' = none), [9] source ids (JSON list),
--   [10] embedding (float32 bytes) or '', [11] embedder name or '', [12] scope id,
--   [13] key mode: 'upsert' (default: a live entry holding the key is updated in place) or
--   'supersede' (a new entry is created and takes the key; the old one is kept, tagged
--   'superseded', its 'superseded_by' set, and an `updated` event published for it).
-- Returns: {status, entry id, field, value, ...}: status 'created' (only the fields the
--   server set: created_at, version, expires_at, event_id), or 'exists' / 'updated' (the
--   whole stored hash). 'exists' is a retried write: nothing changed.
-- Errors: 'ENTRY_TOO_LARGE <size> <limit>', 'SCOPE_FULL <max_entries>'.
-- Checks first, then writes: a failing call writes nothing.

local id, scope = ARGV[1], ARGV[12]
do local bad = check_scope(scope); if bad then return bad end end
local ekey = KEYS[1] .. 'e:' .. id
local cfg = load_cfg(CFG)
local now = now_ms()

if redis.call('EXISTS', ekey) == 1 then return flat_entry('exists', id) end

local size = #ARGV[2] + #ARGV[4]
if size > cfg.max_entry_bytes then
  return redis.error_reply('ENTRY_TOO_LARGE ' .. size .. ' ' .. cfg.max_entry_bytes)
end

local ttl = cfg.ttl_ms
if ARGV[8] ~= '' then ttl = tonumber(ARGV[8]) end
local expires_at = 0
if ttl > 0 then expires_at = now + ttl end
local tags = cjson.decode(ARGV[3])

-- Upsert: a live entry holding the same logical key is updated in place (or superseded).
local key = ARGV[5]
local supersede = false
if key ~= '' then
  local target = redis.call('HGET', KEYS[4], key)
  if target then
    local tkey = KEYS[1] .. 'e:' .. target
    local t = redis.call('HMGET', tkey, 'op_id', 'expires_at', 'version', 'tags')
    if not t[3] then
      -- dangling: written as new below (HSET keys overwrites it); no write here, since the
      -- capacity check may still refuse the call
    elseif t[1] == id then
      return flat_entry('exists', target)  -- retry of the upsert that already applied
    elseif tonumber(t[2]) > 0 and tonumber(t[2]) <= now then
      remove_entry(cfg, target, 'expired', now, scope)
      reschedule_ttl(scope)
    elseif ARGV[13] == 'supersede' then
      supersede = {target, tonumber(t[3]), cjson.decode(t[4])}
    else
      local version = tonumber(t[3]) + 1
      remove_tags(target, cjson.decode(t[4]))
      add_tags(target, tags)
      redis.call('HSET', tkey, 'value', ARGV[2], 'tags', ARGV[3], 'metadata', ARGV[4],
        'importance', ARGV[6], 'updated_at', now, 'expires_at', expires_at,
        'version', version, 'op_id', id, 'source', ARGV[9])
      if ARGV[10] ~= '' then
        redis.call('HSET', tkey, 'embedding', ARGV[10], 'embedder', ARGV[11])
      else
        redis.call('HDEL', tkey, 'embedding', 'embedder')
      end
      if expires_at > 0 then
        redis.call('ZADD', KEYS[5], expires_at, target)
        schedule_ttl(scope, expires_at)
      elseif redis.call('ZREM', KEYS[5], target) == 1 then
        reschedule_ttl(scope)
      end
      local ev = emit(cfg, 'updated', target, version, ARGV[3], now, scope)
      redis.call('HSET', tkey, 'last_event_id', ev)
      return flat_entry('updated', target)
    end
  end
end

-- Capacity: reject, or evict the weakest (lowest evict score; ties oldest first).
if cfg.max_entries > 0 then
  local over = redis.call('ZCARD', KEYS[2]) - cfg.max_entries + 1
  if over > 0 then
    if cfg.on_full == 'reject' then
      return redis.error_reply('SCOPE_FULL ' .. cfg.max_entries)
    end
    local victims = redis.call('ZRANGE', KEYS[6], 0, over - 1)
    for _, victim in ipairs(victims) do remove_entry(cfg, victim, 'evicted', now, scope) end
    if #victims > 0 then reschedule_ttl(scope) end
  end
end

local strength = tonumber(ARGV[7])
redis.call('HSET', ekey, 'id', id, 'scope', scope, 'value', ARGV[2], 'tags', ARGV[3],
  'metadata', ARGV[4], 'key', key, 'importance', ARGV[6], 'strength', strength,
  'strength_at', now, 'reinforcements', 0, 'reinforced_by', '[]', 'created_at', now,
  'updated_at', now, 'expires_at', expires_at, 'version', 1, 'source', ARGV[9], 'op_id', id)
if ARGV[10] ~= '' then redis.call('HSET', ekey, 'embedding', ARGV[10], 'embedder', ARGV[11]) end
redis.call('ZADD', KEYS[2], now, id)
add_tags(id, tags)
if key ~= '' then redis.call('HSET', KEYS[4], key, id) end
if expires_at > 0 then
  redis.call('ZADD', KEYS[5], expires_at, id)
  schedule_ttl(scope, expires_at)
end
local escore = evict_score(cfg, strength, now, 0)
redis.call('ZADD', KEYS[6], escore, id)
if cfg.decay_rate > 0 then redis.call('ZADD', PPRUNE, 'LT', escore, scope) end
redis.call('SADD', PSCOPES, scope)
local ev = emit(cfg, 'written', id, 1, ARGV[3], now, scope)
redis.call('HSET', ekey, 'event_id', ev, 'last_event_id', ev)
if supersede then
  -- The old belief stays as it was written; only its status changes.
  local old, old_version, old_tags = supersede[1], supersede[2] + 1, supersede[3]
  local okey = KEYS[1] .. 'e:' .. old
  local has = false
  for _, t in ipairs(old_tags) do if t == 'superseded' then has = true end end
  if not has then old_tags[#old_tags + 1] = 'superseded' end
  table.sort(old_tags)
  local old_json = cjson.encode(old_tags)
  add_tags(old, {'superseded'})
  redis.call('HSET', okey, 'tags', old_json, 'superseded_by', id, 'version', old_version,
    'updated_at', now)
  local oev = emit(cfg, 'updated', old, old_version, old_json, now, scope)
  redis.call('HSET', okey, 'last_event_id', oev)
end
return {'created', id, 'created_at', now, 'version', 1, 'expires_at', expires_at,
  'event_id', ev, 'strength_at', now}
