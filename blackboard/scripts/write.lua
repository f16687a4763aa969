#!lua
-- write.lua: store one entry with its indexes and publish its event, or upsert by key.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES,
--   PTTL, PPRUNE, USAGE, OWNED, OCFG, prefix..'e:'..id (entry, and evicted entries),
--   prefix..'tag:'..tag (tag sets of the new and of evicted entries).
-- ARGV: [1] entry id, [2] value (JSON), [3] tags (JSON list), [4] metadata (JSON object),
--   [5] logical key or '', [6] importance, [7] initial strength,
--   [8] ttl ms ('' = scope default, '0' = none), [9] source ids (JSON list),
--   [10] embedding (float32 bytes) or '', [11] embedder name or '', [12] scope id,
--   [13] key mode: 'upsert' (default: a live entry holding the key is updated in place) or
--   'supersede' (a new entry is created and takes the key; the old one is kept, tagged
--   'superseded', its 'superseded_by' set, and an `updated` event published for it).
--   [14] the writer's agent id or '' (optional): recorded as `author` outside agent scopes
--   once the ACL has shown the calling user may act as that agent (below).
--   [15] (optional, 'supersede' only) the id the key's holder must have, [16] its version,
--   [17] the holder's new metadata (JSON), [18] its new value (JSON) or '' (unchanged):
--   compare-and-set retirement, so the replaced entry's stored status is true (the caller
--   computes it); a different holder or version is 'VERSION_CONFLICT <expected> <actual>'
--   (actual 0: another entry holds the key) and nothing is written. Without [15] the
--   holder is only tagged and linked, as before. [19] (optional) the key the holder is
--   stored under when it is a former form of [5] (a belief key from before kinds joined
--   it): [5] must then have no live holder (else 'VERSION_CONFLICT <expected> 0'); the
--   former key keeps pointing at the retired holder.
--   [20] (optional; [15..19] are then '' when no holder is retired) the W3C traceparent of
--   the write's span (blackboard/tracing.py): stored as the entry's `tp`, which the relay
--   puts on the bus event. A malformed one is ignored (tracing never fails a write); an
--   upsert or supersession without one drops the old `tp` (it named another write).
-- Author: the entry's `author` field says who wrote it, never taken from the value, metadata
--   or tags. In `agent:<a>` / `agent:<a>:...` scopes it is `a` (the ACL lets no other agent
--   user write there). Elsewhere (team, collective) it is ARGV[14] after a proof the script
--   can check: EXISTS on 'bb:{pN}:s:agent:<writer>:' (same slot), which Redis refuses
--   (NOPERM) unless the calling user may read that agent's keys: the agent itself or a
--   service user. Without ARGV[14] it is ''. An upsert records its writer as the author.
-- Returns: {status, entry id, field, value, ...}: status 'created' (only the fields the
--   server set: created_at, version, expires_at, event_id, strength_at, author), or
--   'exists' / 'updated' (the whole stored hash). 'exists' is a retried write: nothing changed.
-- Errors: 'NOT_AUTHOR <writer>' (this user may not write as that agent), 'BAD_AUTHOR <writer>'
--   (not an agent id), 'ENTRY_TOO_LARGE <size> <limit>' (also an embedding over the limit),
--   'SCOPE_FULL <max_entries>', 'QUOTA_EXCEEDED <quota> <limit> <use> <need> <alone>' (see
--   want_quota in _lib.lua; counted after what this write evicts), 'WRONG_TYPE <key> ...'
--   (a key of the scope was given another type by raw commands), 'FEED_EXHAUSTED <feed>'.
-- Reads and checks first (the type of every key it will touch, room on the feed), then
-- writes: a failing call writes nothing. Evicted entries the dataflow still needs are
-- retired rather than deleted (see remove_entry in _lib.lua).

local id, scope = ARGV[1], ARGV[12]
do local bad = check_scope(scope); if bad then return bad end end
local tp = ARGV[20] or ''
if tp ~= '' and not string.match(tp, TRACEPARENT) then tp = '' end
-- The content event of `ekey` is this write's: its trace context is this write's or none
-- (`had`: whether it holds one, from a read already made).
local function set_tp(ekey, had)
  if tp ~= '' then
    redis.call('HSET', ekey, 'tp', tp)
  elseif had then
    redis.call('HDEL', ekey, 'tp')
  end
end
local ekey = KEYS[1] .. 'e:' .. id
local cfg = load_cfg(CFG)
local now = now_ms()

want_type(ekey, 'hash')
if redis.call('EXISTS', ekey) == 1 then return flat_entry('exists', id) end

-- 1. Decide, reading only.
local author = string.match(SCOPE, '^agent:([^:]+)')
if not author then
  author = ARGV[14] or ''
  if author ~= '' then
    if #author > 64 or not string.match(author, '^[%w_.%-]+$') then
      return redis.error_reply('BAD_AUTHOR ' .. string.sub(author, 1, 80))
    end
    local proof = redis.pcall('EXISTS', BASE .. ':s:agent:' .. author .. ':')
    if type(proof) == 'table' and proof.err then
      return redis.error_reply('NOT_AUTHOR ' .. author)
    end
  end
end
local size = #ARGV[2] + #ARGV[4]
if size > cfg.max_entry_bytes then
  return redis.error_reply('ENTRY_TOO_LARGE ' .. size .. ' ' .. cfg.max_entry_bytes)
end
if #ARGV[10] > cfg.max_entry_bytes then
  return redis.error_reply('ENTRY_TOO_LARGE ' .. #ARGV[10] .. ' ' .. cfg.max_entry_bytes)
end
-- Bytes the new content counts against the quotas (entry_bytes in _lib.lua, as stored).
local new_bytes = #ARGV[2] + #ARGV[4] + #ARGV[3] + #ARGV[9]
want_scope_types()
local ttl = cfg.ttl_ms
if ARGV[8] ~= '' then ttl = tonumber(ARGV[8]) end
local expires_at = 0
if ttl > 0 then expires_at = now + ttl end
local tags = cjson.decode(ARGV[3])
want_tag_types(tags)

-- Upsert: a live entry holding the same logical key is updated in place (or superseded).
local key = ARGV[5]
local supersede = false
local update_target = false
local expired_target = false
if key ~= '' then
  local holder_key = key
  local former = ARGV[19] or ''
  if ARGV[13] == 'supersede' and former ~= '' and former ~= key then
    local cur = redis.call('HGET', KEYS[4], key)
    if cur then
      want_entry_types(cur)
      local c = redis.call('HMGET', KEYS[1] .. 'e:' .. cur, 'version', 'retired')
      if c[1] and not c[2] then
        return redis.error_reply('VERSION_CONFLICT ' .. ARGV[16] .. ' 0')
      end
    end
    holder_key = former
  end
  local target = redis.call('HGET', KEYS[4], holder_key)
  if target then
    local tkey = KEYS[1] .. 'e:' .. target
    want_entry_types(target)
    local t = redis.call('HMGET', tkey, 'op_id', 'expires_at', 'version', 'tags', 'retired',
      'tp')
    if not t[3] or t[5] then
      -- dangling or retired: written as new below (HSET keys overwrites it)
    elseif t[1] == id then
      return flat_entry('exists', target)  -- retry of the upsert that already applied
    elseif tonumber(t[2]) > 0 and tonumber(t[2]) <= now then
      expired_target = target
    elseif ARGV[13] == 'supersede' then
      local want = ARGV[15] or ''
      if want ~= '' and (want ~= target or tonumber(ARGV[16]) ~= tonumber(t[3])) then
        local actual = t[3]
        if want ~= target then actual = '0' end
        return redis.error_reply('VERSION_CONFLICT ' .. ARGV[16] .. ' ' .. actual)
      end
      supersede = {target, tonumber(t[3]), cjson.decode(t[4]), t[4], want ~= '', nil, t[6]}
      want_type(KEYS[1] .. 'tag:superseded', 'set')
    else
      update_target = {target, tkey, tonumber(t[3]) + 1, cjson.decode(t[4]), t[6]}
    end
  end
end

-- Capacity: reject, or evict the weakest (lowest evict score; ties oldest first).
local victims = {}
if not update_target and cfg.max_entries > 0 then
  local live = redis.call('ZCARD', KEYS[2])
  if expired_target then live = live - 1 end
  local over = live - cfg.max_entries + 1
  if over > 0 then
    if cfg.on_full == 'reject' then
      return redis.error_reply('SCOPE_FULL ' .. cfg.max_entries)
    end
    for _, victim in ipairs(redis.call('ZRANGE', KEYS[6], 0, over)) do
      if victim ~= expired_target and #victims < over then
        want_entry_types(victim)
        victims[#victims + 1] = victim
      end
    end
  end
end

-- Quotas: what the write adds, net of what it replaces or evicts.
local d_entries, d_bytes = 1, new_bytes
if update_target then
  d_entries, d_bytes = 0, new_bytes - entry_bytes(update_target[2])
else
  local gone = victims
  if expired_target then gone = {expired_target, unpack(victims)} end
  for _, v in ipairs(gone) do
    local vkey = KEYS[1] .. 'e:' .. v
    local f = redis.call('HMGET', vkey, 'version', 'retired')
    if f[1] and not f[2] then  -- what remove_entry will count off (dangling ids: nothing)
      d_entries = d_entries - 1
      d_bytes = d_bytes - entry_bytes(vkey)
    end
  end
end
local old_json = false
if supersede then
  -- The old entry stays live, tagged 'superseded': its tags grow.
  local old_tags = supersede[3]
  local has = false
  for _, t in ipairs(old_tags) do if t == 'superseded' then has = true end end
  if not has then old_tags[#old_tags + 1] = 'superseded' end
  table.sort(old_tags)
  old_json = cjson.encode(old_tags)
  d_bytes = d_bytes + #old_json - #supersede[4]
  if supersede[5] then  -- its metadata (and value) are replaced too: count the difference
    local okey = KEYS[1] .. 'e:' .. supersede[1]
    local grow = #ARGV[17] - redis.call('HSTRLEN', okey, 'metadata')
    if ARGV[18] ~= '' then grow = grow + #ARGV[18] - redis.call('HSTRLEN', okey, 'value') end
    supersede[6] = grow
    d_bytes = d_bytes + grow
  end
end
want_quota(cfg, d_entries, d_bytes, new_bytes)

-- 2. Write: nothing below can fail.
if update_target then
  local target, tkey, version, old_tags = update_target[1], update_target[2], update_target[3],
    update_target[4]
  remove_tags(target, old_tags)
  add_tags(target, tags)
  redis.call('HSET', tkey, 'value', ARGV[2], 'tags', ARGV[3], 'metadata', ARGV[4],
    'importance', ARGV[6], 'updated_at', now, 'expires_at', expires_at,
    'version', version, 'op_id', id, 'source', ARGV[9], 'author', author)
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
  count_usage(0, d_bytes)
  set_tp(tkey, update_target[5])
  local ev = emit(cfg, 'updated', target, version, ARGV[3], now, scope)
  redis.call('HSET', tkey, 'last_event_id', ev)
  return flat_entry('updated', target)
end

local removed = false
if expired_target then
  remove_entry(cfg, expired_target, 'expired', now, scope, 'expired')
  removed = true
end
for _, victim in ipairs(victims) do
  if remove_entry(cfg, victim, 'evicted', now, scope, 'capacity') then removed = true end
end
if removed then reschedule_ttl(scope) end

local strength = tonumber(ARGV[7])
redis.call('HSET', ekey, 'id', id, 'scope', scope, 'value', ARGV[2], 'tags', ARGV[3],
  'metadata', ARGV[4], 'key', key, 'importance', ARGV[6], 'strength', strength,
  'strength_at', now, 'reinforcements', 0, 'reinforced_by', '[]', 'created_at', now,
  'updated_at', now, 'expires_at', expires_at, 'version', 1, 'source', ARGV[9], 'op_id', id,
  'author', author)
if ARGV[10] ~= '' then redis.call('HSET', ekey, 'embedding', ARGV[10], 'embedder', ARGV[11]) end
if tp ~= '' then redis.call('HSET', ekey, 'tp', tp) end
count_usage(1, new_bytes)
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
  -- The old belief keeps its claim and evidence; only its status (and link) changes.
  local old, old_version = supersede[1], supersede[2] + 1
  local okey = KEYS[1] .. 'e:' .. old
  count_usage(0, #old_json - #supersede[4])
  add_tags(old, {'superseded'})
  redis.call('HSET', okey, 'tags', old_json, 'superseded_by', id, 'version', old_version,
    'updated_at', now)
  if supersede[5] then
    count_usage(0, supersede[6])
    redis.call('HSET', okey, 'metadata', ARGV[17])
    if ARGV[18] ~= '' then redis.call('HSET', okey, 'value', ARGV[18]) end
  end
  set_tp(okey, supersede[7])
  local oev = emit(cfg, 'updated', old, old_version, old_json, now, scope)
  redis.call('HSET', okey, 'last_event_id', oev)
end
return {'created', id, 'created_at', now, 'version', 1, 'expires_at', expires_at,
  'event_id', ev, 'strength_at', now, 'author', author}
