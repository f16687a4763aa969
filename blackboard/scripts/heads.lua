-- heads: the newest id of each stream, for a reader's read-your-writes check.
-- KEYS[1..n]  streams (scope feeds, buses); a missing stream is empty
-- Reply: {id of each stream's newest entry ("0-0" when empty)}, in KEYS order
-- One command instead of one XREVRANGE per stream: one reply to parse, and a question
-- small enough to send before a search and read after it (blackboard.probe).
local out = {}
for i, k in ipairs(KEYS) do
  local last = redis.call('XREVRANGE', k, '+', '-', 'COUNT', 1)
  out[i] = last[1] and last[1][1] or '0-0'
end
return out
