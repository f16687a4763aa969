-- embed.lua: attach an embedding to an entry, if the entry is still at the version it was
-- computed for. An index attachment, not a content change: no version bump, no event.
--
-- KEYS: [1] entry hash.
-- ARGV: [1] version the embedding was computed from, [2] embedding (float32 bytes),
--   [3] embedder name.
-- Returns: 1 when stored, 0 when the entry is gone or changed since (its new version gets
--   its own embedding).

local v = redis.call('HGET', KEYS[1], 'version')
if not v or tonumber(v) ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'embedding', ARGV[2], 'embedder', ARGV[3])
return 1
