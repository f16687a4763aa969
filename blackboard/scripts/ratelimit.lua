-- ratelimit: one token bucket (per gateway token), shared by every gateway process.
-- KEYS[1]  the bucket hash {tokens, at_ms} (blackboard.ratelimit.RateLimiter.key)
-- ARGV[1]  refill rate, tokens per second (> 0)
-- ARGV[2]  burst: the bucket's size
-- ARGV[3]  cost of this request (tokens)
-- ARGV[4]  optional: the most tokens to take (>= cost): a lease, the whole tokens beyond
--          the cost that are in the bucket, up to this many in all, for the caller to
--          spend without asking (blackboard.ratelimit.RateLimiter.lease)
-- Reply: {allowed (1|0), retry_after_ms (0 when allowed), tokens left (floor),
--         tokens taken (the cost and the lease; 0 when refused)}
-- Time is the server's (TIME), so processes with skewed clocks share one bucket.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local most = math.max(cost, tonumber(ARGV[4] or cost))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local got = redis.call('HMGET', KEYS[1], 'tokens', 'at_ms')
local tokens = tonumber(got[1])
local at = tonumber(got[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate / 1000)
end
local allowed = 0
local retry = 0
local taken = 0
if tokens >= cost then
  taken = math.max(cost, math.min(most, math.floor(tokens)))
  tokens = tokens - taken
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at_ms', now)
-- An idle bucket refills to full after burst / rate seconds: keep it no longer.
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, retry, math.floor(tokens), taken}
