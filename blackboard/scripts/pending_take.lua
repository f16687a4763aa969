-- pending_take.lua: remove a processed batch from the head of a pending buffer, or move it
-- to the DLQ with a reason, checking first that the head is still that batch.
--
-- KEYS: [1] pending buffer (list), [2] partition dlq, [3] partition pending index,
--   [4] partition inflight hash (its field for this buffer is cleared with the batch).
-- ARGV: [1] mode ('trim' | 'dlq'), [2] batch size n, [3] first item, [4] last item,
--   [5] reason (dlq), [6] edge id, [7] target scope, [8] dlq max length.
-- Returns: 1 when the batch was removed, 0 when the head no longer matches (another
--   worker took it meanwhile: nothing is removed twice).
-- Trimming releases the batch's holds on its source entries ('bb:{pN}:s:<scope>:e:<id>',
-- derived from KEYS[3], same slot) and reaps the retired ones nothing needs any more
-- (_flow.lua). A dead-lettered batch keeps its holds: its entries stay for a re-drive.

local n = tonumber(ARGV[2])
if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[3] or redis.call('LINDEX', KEYS[1], n - 1) ~= ARGV[4] then
  return 0
end
local items = redis.call('LRANGE', KEYS[1], 0, n - 1)
if ARGV[1] == 'dlq' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[8], '*', 'kind', 'dataflow', 'edge', ARGV[6],
    'target', ARGV[7], 'reason', ARGV[5], 'items', table.concat(items, '\n'))
else
  release_items(string.sub(KEYS[3], 1, -10), items) -- base of 'bb:{pN}:pendings'
end
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('HDEL', KEYS[4], KEYS[1])
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[3], KEYS[1]) end
return 1
