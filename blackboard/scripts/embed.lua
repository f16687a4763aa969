-- embed.lua: attach an embedding to an entry, if the entry is still at the version it was
-- computed for, and settle the entry's place in the partition's queue of entries waiting
-- for a vector. An index attachment, not a content change: no version bump, no event.
--
-- KEYS: [1] entry hash 'bb:{pN}:s:<scope>:e:<id>'. Derived from it (same slot):
--   'bb:{pN}:unembedded' (zset of '<scope>|<id>' waiting for a vector).
-- ARGV: [1] version the embedding was computed from ('' with mode 'gone'),
--   [2] embedding (float32 bytes; '' = store nothing, only settle), [3] embedder name,
--   [4] mode: '' (any caller: store, then leave the queue best effort), 'queued' (the index
--   role: store only while the entry is still queued, so each queued version is embedded
--   once however many indexers raced for it), 'gone' (the index role read no live entry:
--   leave the queue if the entry is missing, retired or expired).
-- Returns: 1 when stored, 0 otherwise (the entry is gone or changed since: its new version
--   is queued again and gets its own embedding; or, 'queued', another indexer stored it).

local base, scope, id = string.match(KEYS[1], '^(.*{p%d+}):s:(.+):e:([^:]+)$')
if not base then return redis.error_reply('BAD_SCOPE entry key ' .. KEYS[1]) end
local queue, member = base .. ':unembedded', scope .. '|' .. id
local mode = ARGV[4] or ''
local f = redis.call('HMGET', KEYS[1], 'version', 'retired', 'expires_at')

if mode == 'gone' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local exp = tonumber(f[3] or '0') or 0
  if not f[1] or f[2] or (exp > 0 and exp <= now) then redis.call('ZREM', queue, member) end
  return 0
end
if not f[1] or tonumber(f[1]) ~= tonumber(ARGV[1]) then return 0 end
if mode == 'queued' and not redis.call('ZSCORE', queue, member) then return 0 end
local stored = 0
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'embedding', ARGV[2], 'embedder', ARGV[3])
  stored = 1
end
-- The vector is the current content's: the entry waits no more. pcall: an agent storing
-- vectors of its own scope may not touch the partition queue (the index role settles it).
redis.pcall('ZREM', queue, member)
return stored
