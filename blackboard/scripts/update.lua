#!lua
-- update.lua: change fields of a live entry, with optional compare-and-set on its version.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES, PTTL, PPRUNE,
--   USAGE, OWNED, OCFG, prefix..'e:'..id, prefix..'tag:'..tag.
-- ARGV: [1] entry id, [2] expected version ('' = any), [3] scope id, then pairs
--   field, value with field one of: value, tags (JSON list), metadata, importance,
--   ttl_ms ('0' = no expiry), source, embedding, embedder, op_id.
-- A change of value or metadata without a new embedding drops the stored one. The trace
--   context of the write (`tp`, write.lua ARGV[20]) is dropped: this content event is not its.
-- Returns: {'updated', id, field, value, ...} the whole stored hash after the update,
--   or {'unchanged', id, ...} when op_id equals the stored op_id (a retried update).
-- Errors: 'NOT_FOUND <id>' (also for a retired entry), 'VERSION_CONFLICT <expected> <actual>',
--   'ENTRY_TOO_LARGE <size> <limit>', 'QUOTA_EXCEEDED <quota> <limit> <use> <need> <alone>' (bytes the
--   update adds), 'WRONG_TYPE ...', 'FEED_EXHAUSTED ...' (checked before any write).

local id, scope = ARGV[1], ARGV[3]
do local bad = check_scope(scope); if bad then return bad end end
local ekey = KEYS[1] .. 'e:' .. id
local cfg = load_cfg(CFG)
local now = now_ms()
want_type(ekey, 'hash')
local cur = redis.call('HMGET', ekey, 'version', 'expires_at', 'tags', 'value', 'metadata', 'op_id',
  'retired', 'tp')
if not cur[1] or cur[7] then return redis.error_reply('NOT_FOUND ' .. id) end
local exp_at = tonumber(cur[2])
if exp_at > 0 and exp_at <= now then return redis.error_reply('NOT_FOUND ' .. id) end

local ch = {}
for i = 4, #ARGV, 2 do ch[ARGV[i]] = ARGV[i + 1] end
if ch.op_id and ch.op_id == cur[6] then return flat_entry('unchanged', id) end
if ARGV[2] ~= '' and tonumber(ARGV[2]) ~= tonumber(cur[1]) then
  return redis.error_reply('VERSION_CONFLICT ' .. ARGV[2] .. ' ' .. cur[1])
end
local size = #(ch.value or cur[4]) + #(ch.metadata or cur[5])
if size > cfg.max_entry_bytes then
  return redis.error_reply('ENTRY_TOO_LARGE ' .. size .. ' ' .. cfg.max_entry_bytes)
end

want_scope_types()
want_entry_types(id)
if ch.tags then want_tag_types(cjson.decode(ch.tags)) end
if #(ch.embedding or '') > cfg.max_entry_bytes then
  return redis.error_reply('ENTRY_TOO_LARGE ' .. #ch.embedding .. ' ' .. cfg.max_entry_bytes)
end
local new_bytes = 0
for _, f in ipairs({'value', 'metadata', 'tags', 'source'}) do
  if ch[f] then new_bytes = new_bytes + #ch[f]
  else new_bytes = new_bytes + redis.call('HSTRLEN', ekey, f) end
end
local d_bytes = new_bytes - entry_bytes(ekey)
want_quota(cfg, 0, d_bytes, new_bytes)

local version = tonumber(cur[1]) + 1
local tags_json = cur[3]
if ch.tags then
  remove_tags(id, cjson.decode(cur[3]))
  add_tags(id, cjson.decode(ch.tags))
  tags_json = ch.tags
end
-- A vector computed from the old text would silently describe the new one: drop it
-- unless the caller sends the new text's vector along.
if (ch.value or ch.metadata) and not ch.embedding then
  redis.call('HDEL', ekey, 'embedding', 'embedder')
end
for _, f in ipairs({'value', 'metadata', 'importance', 'source', 'embedding', 'embedder', 'op_id'}) do
  if ch[f] then redis.call('HSET', ekey, f, ch[f]) end
end
if ch.tags then redis.call('HSET', ekey, 'tags', ch.tags) end
if ch.ttl_ms then
  local ttl = tonumber(ch.ttl_ms)
  if ttl > 0 then
    exp_at = now + ttl
    redis.call('ZADD', KEYS[5], exp_at, id)
    schedule_ttl(scope, exp_at)
  else
    exp_at = 0
    if redis.call('ZREM', KEYS[5], id) == 1 then reschedule_ttl(scope) end
  end
  redis.call('HSET', ekey, 'expires_at', exp_at)
end
redis.call('HSET', ekey, 'version', version, 'updated_at', now)
if cur[8] then redis.call('HDEL', ekey, 'tp') end
count_usage(0, d_bytes)
local ev = emit(cfg, 'updated', id, version, tags_json, now, scope)
redis.call('HSET', ekey, 'last_event_id', ev)
return flat_entry('updated', id)
