-- lease_table.lua: take or give up a partition lease in the lease table of every role.
--
-- KEYS: [1] the lease table (bb:leases): h:<role>:<p> -> holder, w:<role>:<holder> -> its
--   process, b:<process> -> the process's last beat (ms). A lease lasts as long as its
--   holder's process beats: a process renews all its leases with one HSET of its beat
--   field, not one command per lease.
-- ARGV: [1] op ('acquire' | 'release'), [2] role, [3] partition, [4] holder,
--   [5] now (ms, Redis clock as the caller measured it), [6] ttl ms.
-- Returns: 1 when the caller holds the lease after the call (acquire) or released it
--   (release); 0 otherwise (held by a holder that beat within ttl ms, or not the caller's).

local field = 'h:' .. ARGV[2] .. ':' .. ARGV[3]
local cur = redis.call('HGET', KEYS[1], field)
if ARGV[1] == 'acquire' then
  if cur == ARGV[4] then
    return 1
  end
  if cur then
    local proc = redis.call('HGET', KEYS[1], 'w:' .. ARGV[2] .. ':' .. cur)
    local beat = proc and redis.call('HGET', KEYS[1], 'b:' .. proc)
    if beat and tonumber(ARGV[5]) - tonumber(beat) < tonumber(ARGV[6]) then
      return 0
    end
  end
  redis.call('HSET', KEYS[1], field, ARGV[4])
  return 1
elseif ARGV[1] == 'release' then
  if cur == ARGV[4] then
    redis.call('HDEL', KEYS[1], field)
    return 1
  end
  return 0
end
return redis.error_reply('unknown lease op ' .. tostring(ARGV[1]))
