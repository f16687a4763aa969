-- dlq.lua: move a bus event a consumer group failed on too often to the DLQ, and ack it.
--
-- KEYS: [1] partition bus, [2] partition dlq.
-- ARGV: [1] consumer group (role), [2] event stream id, [3] times delivered,
--   [4] reason, [5] dlq max length (approximate), then the event's fields as pairs.
-- Returns: the DLQ stream id, or false when the event was no longer pending for the group
--   (another consumer acked or moved it first: nothing is written twice).

local pend = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #pend == 0 then return false end
local fields = {'group', ARGV[1], 'event_id', ARGV[2], 'deliveries', ARGV[3], 'reason', ARGV[4]}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', unpack(fields))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return id
