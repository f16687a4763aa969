-- claim.lua: take over events another consumer of the group left pending too long.
--
-- KEYS: [1] partition bus.
-- ARGV: [1] consumer group (role), [2] claiming consumer, [3] min idle ms,
--   [4] start id, [5] count.
-- Returns: {next start id ('0-0' when the scan is complete), claimed id, ...}. JUSTID: the
--   delivery counter is not incremented here; re-delivery (XCLAIM) counts it once.
-- Runs XAUTOCLAIM inside a script only so that its raw reply reaches the client unparsed.

local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4],
  'COUNT', ARGV[5], 'JUSTID')
local out = {r[1]}
for _, id in ipairs(r[2]) do out[#out + 1] = id end
return out
