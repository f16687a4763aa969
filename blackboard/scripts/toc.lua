#!lua
-- toc.lua: change a scope's table of contents (retrieval.toc), compare-and-set on its
-- version, so a change computed from a stale read (another writer, a rebuild) is refused
-- whole and computed again; a replayed batch finds its entries placed and changes nothing.
--
-- KEYS: [1] the toc hash 'bb:{pN}:s:<scope>:toc' (node id -> JSON node; field '_v': the
--   version), [2] the placements hash 'bb:{pN}:s:<scope>:tocin' (entry id -> segment id).
-- ARGV: [1] mode: 'apply', or 'reset' (delete both keys, whatever the version; nothing else
--   is read), [2] the version the change was computed from ('0': the toc was empty),
--   [3] n: how many nodes follow, then n pairs (node id, JSON node), then pairs (entry id,
--   segment id) of the entries the change places.
-- Returns: the new version; -1 when the stored version is not ARGV[2], -2 when an entry
--   the change places is placed already (a replay: the caller reads the placements and
--   computes the change again without it); nothing is written then.

if ARGV[1] == 'reset' then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 0
end
local cur = redis.call('HGET', KEYS[1], '_v') or '0'
if cur ~= ARGV[2] then return -1 end
local n = tonumber(ARGV[3])
local nodes, placed = {}, {}
for i = 4, 3 + 2 * n do nodes[#nodes + 1] = ARGV[i] end
for i = 4 + 2 * n, #ARGV do placed[#placed + 1] = ARGV[i] end
for i = 1, #placed, 2 do
  if redis.call('HEXISTS', KEYS[2], placed[i]) == 1 then return -2 end
end
local v = tonumber(cur) + 1
if #nodes > 0 then redis.call('HSET', KEYS[1], unpack(nodes)) end
redis.call('HSET', KEYS[1], '_v', v)
if #placed > 0 then redis.call('HSET', KEYS[2], unpack(placed)) end
return v
