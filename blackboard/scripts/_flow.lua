-- _flow.lua: the dataflow hold, shared by every script that retires, holds or reaps entries
-- (prepended before _lib.lua to the mutation scripts, and alone to pending_take, reap,
-- edge_drop and relay; not a script of its own).
--
-- An entry evicted or expired while the dataflow still needs it is *retired*: gone from
-- every reader index, its hash kept with field `retired` and listed in 'bb:{pN}:retired'.
-- It is needed while any of these holds:
--   `holds` > 0            a buffer item names it and has not been consolidated yet
--   `relayed` < `cver`     its newest content event has not reached the bus yet
--   `relayed_id` >= the partition's flowmark   some consumer group has not taken it in
-- `base` below is 'bb:{pN}'; every key derived from it shares the caller's slot.

-- Stream ids compared as numbers ('<ms>-<seq>'; the ms of real ids fit a double exactly).
local function id_lt(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, bm = tonumber(am), tonumber(bm)
  if am ~= bm then return am < bm end
  return tonumber(as) < tonumber(bs)
end

-- Whether the entry at `ekey` is needed by nobody. Entries written before the relay existed
-- (no `cver`) are not held.
local function reapable(base, ekey)
  local f = redis.call('HMGET', ekey, 'cver', 'holds', 'relayed', 'relayed_id')
  if not f[1] then return true end
  local cver = tonumber(f[1])
  if not cver or (tonumber(f[2]) or 0) > 0 then return false end
  if (tonumber(f[3]) or 0) < cver or not f[4] then return false end
  local mark = redis.call('GET', base .. ':flowmark')
  return mark ~= false and mark ~= nil and id_lt(f[4], mark)
end

-- Delete a retired entry nothing needs; -> whether this call deleted it. A member naming a
-- live or missing entry is not one of ours: it leaves the retired set.
local function reap(base, scope, id)
  local ekey = base .. ':s:' .. scope .. ':e:' .. id
  if redis.call('HEXISTS', ekey, 'retired') == 0 then
    redis.call('SREM', base .. ':retired', scope .. '|' .. id)
    return false
  end
  if not reapable(base, ekey) then return false end
  redis.call('DEL', ekey)
  redis.call('SREM', base .. ':retired', scope .. '|' .. id)
  return true
end

-- Release the holds of consolidated (or dropped) buffer items '<at>|<scope>|<entry id>',
-- reaping the retired entries no longer needed. -> how many entries were reaped.
-- A buffer can hold many agents' items (a team edge): an entry its agent mangled with raw
-- commands (another type, a junk `holds`) is passed over, never allowed to fail the batch.
local function release_items(base, items)
  local reaped = 0
  for _, item in ipairs(items) do
    local scope, id = string.match(item, '^%d+|([%w_.:-]+)|([%w_-]+)$')
    local ekey = scope and (base .. ':s:' .. scope .. ':e:' .. id)
    if ekey and redis.call('TYPE', ekey)['ok'] == 'hash' then
      local left = redis.pcall('HINCRBY', ekey, 'holds', -1)
      -- Only a retired entry whose last hold just went can be reaped (most are live).
      if type(left) == 'number' and left <= 0 and redis.call('HEXISTS', ekey, 'retired') == 1 then
        local ok, gone = pcall(reap, base, scope, id)
        if ok and gone then reaped = reaped + 1 end
      end
    end
  end
  return reaped
end
