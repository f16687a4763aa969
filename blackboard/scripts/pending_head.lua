-- pending_head.lua: fix the head batch of a dataflow pending buffer and return its items.
--
-- KEYS: [1] pending buffer (list bb:{pN}:pending:<edge>:<target>), [2] partition inflight
--   hash (field: the buffer's key; value: the size of its batch in flight).
-- ARGV: [1] batch limit (items), used when no batch is in flight.
-- Returns: the batch's items, oldest first; empty when the buffer is empty (any stale
--   boundary is then cleared).
-- The boundary is recorded before the transformer runs, so a replay after a crash takes
-- exactly the same items even if the buffer grew meanwhile, and yields the same draft ids.

local inflight = redis.call('HGET', KEYS[2], KEYS[1])
local n = tonumber(inflight or ARGV[1])
local items = redis.call('LRANGE', KEYS[1], 0, n - 1)
if #items == 0 then
  redis.call('HDEL', KEYS[2], KEYS[1])
  return items
end
if not inflight then redis.call('HSET', KEYS[2], KEYS[1], #items) end
return items
