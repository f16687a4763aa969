-- reap.lua: delete the retired entries of one partition that nothing needs any more
-- (service user; run by the bus trimmer after it moved the flowmark).
--
-- KEYS: [1] the partition's retired set ('bb:{pN}:retired', members '<scope>|<entry id>').
--   Derived from KEYS[1] (same slot): 'bb:{pN}:flowmark' and the entry hashes.
-- ARGV: [1] SSCAN cursor ('0' to start), [2] members to look at (SSCAN COUNT).
-- Returns: {next cursor ('0' when done), reaped, still held}.

local base = string.sub(KEYS[1], 1, -9) -- 'bb:{pN}' of 'bb:{pN}:retired'
local res = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local reaped, held = 0, 0
for _, m in ipairs(res[2]) do
  local scope, id = string.match(m, '^([%w_.:-]+)|([%w_-]+)$')
  if not scope then
    redis.call('SREM', KEYS[1], m) -- junk an agent added (it may SADD, nothing else)
  else
    local ekey = base .. ':s:' .. scope .. ':e:' .. id
    if redis.call('TYPE', ekey)['ok'] ~= 'hash' then
      redis.call('SREM', KEYS[1], m)
    elseif reap(base, scope, id) then
      reaped = reaped + 1
    else
      held = held + 1
    end
  end
end
return {res[1], reaped, held}
