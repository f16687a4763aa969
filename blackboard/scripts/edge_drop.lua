-- edge_drop.lua: drop every buffer of a removed dataflow edge in one partition, releasing
-- the holds of the items it held (service user).
--
-- KEYS: [1] the partition's pending index ('bb:{pN}:pendings', set of buffer keys),
--   [2] the partition's inflight hash. Derived (same slot): the buffers
--   'bb:{pN}:pending:<edge>:<target>' listed in KEYS[1], the items' entry hashes.
-- ARGV: [1] edge id.
-- Returns: {buffers dropped, items dropped}. Run after the edge's record is gone and the
--   edge set version bumped, so no worker appends to the edge again.

local base = string.sub(KEYS[1], 1, -10) -- 'bb:{pN}' of 'bb:{pN}:pendings'
local prefix = base .. ':pending:' .. ARGV[1] .. ':'
local buffers, items = 0, 0
for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if string.sub(key, 1, #prefix) == prefix then
    local held = redis.call('LRANGE', key, 0, -1)
    release_items(base, held)
    items = items + #held
    buffers = buffers + 1
    redis.call('DEL', key)
    redis.call('HDEL', KEYS[2], key)
    redis.call('SREM', KEYS[1], key)
  end
end
return {buffers, items}
