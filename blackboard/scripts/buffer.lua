-- buffer.lua: append matching bus events to dataflow pending buffers and ack them, atomically,
-- for the events this consumer still owns.
--
-- KEYS: [1] partition bus, [2] partition pending index (set of buffer keys),
--   [3..] pending buffers (lists bb:{pN}:pending:<edge>:<target>), all in the bus's slot.
-- ARGV: [1] consumer group (role), [2] consumer name, [3] number of events n, then per
--   event: its stream id, its item count k, then k pairs (buffer index i -> KEYS[2 + i],
--   item '<at ms>|<scope>|<entry id>').
-- Returns: {items appended, events skipped}. An event no longer pending for this consumer
--   (acked, or claimed by another consumer while this one was slow) is skipped whole: only
--   its current owner appends it, so an item is never buffered twice.
-- A crash before this script leaves the events pending (re-delivered, appended once);
-- after it, they are in the buffers and acked: nothing is lost or appended twice.

local n = tonumber(ARGV[3])
local pos = 4
local appended, skipped = 0, 0
for _ = 1, n do
  local id = ARGV[pos]
  local k = tonumber(ARGV[pos + 1])
  pos = pos + 2
  local mine = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2])
  if #mine == 0 then
    skipped = skipped + 1
  else
    for j = 0, k - 1 do
      local key = KEYS[2 + tonumber(ARGV[pos + 2 * j])]
      redis.call('RPUSH', key, ARGV[pos + 2 * j + 1])
      redis.call('SADD', KEYS[2], key)
      appended = appended + 1
    end
    redis.call('XACK', KEYS[1], ARGV[1], id)
  end
  pos = pos + 2 * k
end
return {appended, skipped}
