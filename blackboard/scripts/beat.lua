#!lua flags=allow-oom
-- beat.lua: a worker's liveness write, allowed while Redis is over its maxmemory.
--
-- Data writes are refused whole over maxmemory (README, "Memory pressure"); a worker's
-- heartbeat and lease beats are not data: a few fields of fixed keys rewritten in place.
-- Refusing them would make a live worker vanish from `stats` and drop its leases while it
-- waits for memory. So this script declares allow-oom, and is kept to those keys and sizes:
--
-- KEYS: [1] 'bb:leases' (the lease table) or a key under 'bb:workers:' (a worker record,
--   the role zsets).
-- ARGV: [1] 'hset', 'zadd' or 'sadd', [2] ttl ms for the key ('' = leave it), then field,
--   value pairs (hset), score, member pairs (zadd) or members (sadd); at most 64 arguments
--   of at most 64 KiB each.
-- Returns: 1. Errors: 'BAD_BEAT <why>' (another key, op or size), WRONGTYPE: nothing written.
-- Redis's ACL still checks each command against the caller: agent users hold neither key.

local key, op, ttl = KEYS[1], ARGV[1], ARGV[2]
if key ~= 'bb:leases' and string.sub(key, 1, 11) ~= 'bb:workers:' then
  return redis.error_reply('BAD_BEAT not a beat key: ' .. key)
end
local types = {hset = 'hash', zadd = 'zset', sadd = 'set'}
if not types[op] then return redis.error_reply('BAD_BEAT op ' .. op) end
local n = #ARGV - 2
if n < 1 or n > 64 or (op ~= 'sadd' and n % 2 == 1) then
  return redis.error_reply('BAD_BEAT arguments')
end
for i = 3, #ARGV do
  if #ARGV[i] > 65536 then return redis.error_reply('BAD_BEAT value too large') end
end
if ttl ~= '' and not string.match(ttl, '^%d+$') then return redis.error_reply('BAD_BEAT ttl') end
if op == 'zadd' then
  for i = 3, #ARGV, 2 do
    if not tonumber(ARGV[i]) then return redis.error_reply('BAD_BEAT score') end
  end
end

-- The first write: on a key of another type it fails before anything is written.
redis.call(string.upper(op), key, unpack(ARGV, 3))
if ttl ~= '' then redis.call('PEXPIRE', key, ttl) end
return 1
