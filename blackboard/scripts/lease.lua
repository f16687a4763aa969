#!lua flags=allow-oom
-- lease.lua: acquire, renew or release a lease held under a token.
--
-- KEYS: [1] lease key (bb:lease:<role>:<p> or bb:lease:job:<job>:<p>).
-- ARGV: [1] op ('acquire' | 'renew' | 'release'), [2] holder token, [3] ttl ms.
-- Returns: 1 when the caller holds the lease after the call (acquire/renew) or released it
--   (release); 0 otherwise (held by someone else, or lapsed before a renew).
-- Errors: 'BAD_LEASE <why>' (not a lease key, a token over 256 bytes, a bad ttl).
-- Runs while Redis is over its maxmemory (allow-oom): the maintenance jobs that free memory
-- (sweep, prune) run under a job lease. Hence the checks: only 'bb:lease:' keys (no agent
-- user holds them; Redis's ACL still checks each command), a small value.

if string.sub(KEYS[1], 1, 9) ~= 'bb:lease:' then
  return redis.error_reply('BAD_LEASE not a lease key: ' .. KEYS[1])
end
if #ARGV[2] > 256 then return redis.error_reply('BAD_LEASE token too long') end
if ARGV[1] ~= 'release' and not string.match(ARGV[3] or '', '^%d+$') then
  return redis.error_reply('BAD_LEASE ttl')
end

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
