-- lease.lua: acquire, renew or release a lease held under a token.
--
-- KEYS: [1] lease key (bb:lease:<role>:<p> or bb:lease:job:<job>:<p>).
-- ARGV: [1] op ('acquire' | 'renew' | 'release'), [2] holder token, [3] ttl ms.
-- Returns: 1 when the caller holds the lease after the call (acquire/renew) or released it
--   (release); 0 otherwise (held by someone else, or lapsed before a renew).

local cur = redis.call('GET', KEYS[1])
if ARGV[1] == 'acquire' then
  if cur == false then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return 1
  end
  if cur == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
  end
  return 0
elseif ARGV[1] == 'renew' then
  if cur == ARGV[2] then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
  end
  return 0
elseif ARGV[1] == 'release' then
  if cur == ARGV[2] then
    redis.call('DEL', KEYS[1])
    return 1
  end
  return 0
end
return redis.error_reply('unknown lease op ' .. tostring(ARGV[1]))
