#!lua
-- buffer.lua: append matching bus events to dataflow pending buffers and ack them, atomically,
-- for the events this consumer still owns.
--
-- KEYS: [1] partition bus, [2] partition pending index (set of buffer keys),
--   [3..] pending buffers (lists bb:{pN}:pending:<edge>:<target>), all in the bus's slot.
--   Derived from KEYS[1] (same slot): 'bb:{pN}:edgesv' (edge set version) and each item's
--   entry hash 'bb:{pN}:s:<scope>:e:<entry id>'.
-- ARGV: [1] consumer group (role), [2] consumer name, [3] number of events n,
--   [4] lowest and [5] highest stream id of the events, [6] the edge set version the caller
--   matched the events against, then per event: its stream id, its item count k, then k
--   pairs (buffer index i -> KEYS[2 + i], item '<at ms>|<scope>|<entry id>').
-- Returns: {items appended, events skipped}, or {-1, current version} when the edges changed
--   since the caller loaded them: nothing is appended or acked, and the caller matches again
--   (so a write that follows an edge install is matched against that edge). An event no
--   longer pending for this consumer (acked, or claimed by another consumer while this one
--   was slow) is skipped whole: only its current owner appends it, so an item is never
--   buffered twice. Each appended item adds one to its entry's `holds`, which keeps an
--   evicted or expired entry (retired) until the item is consolidated; an item whose entry
--   is gone (deleted) is not appended.
-- A crash before this script leaves the events pending (re-delivered, appended once);
-- after it, they are in the buffers and acked: nothing is lost or appended twice.
-- Cost: one XPENDING over the batch's id range, one RPUSH per buffer, one SADD, one XACK,
-- instead of four commands per event.

local CHUNK = 1000 -- arguments per command, well under Lua's unpack limit
local function call_chunked(cmd, key, prefix, list)
  for i = 1, #list, CHUNK do
    local args = {}
    for j = i, math.min(i + CHUNK - 1, #list) do args[#args + 1] = list[j] end
    if prefix then
      redis.call(cmd, key, prefix, unpack(args))
    else
      redis.call(cmd, key, unpack(args))
    end
  end
end

local base = string.sub(KEYS[1], 1, -5) -- 'bb:{pN}' of 'bb:{pN}:bus'
local version = redis.call('GET', base .. ':edgesv') or '0'
if version ~= ARGV[6] then return {-1, version} end

local mine = {}
for _, row in ipairs(redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[4], ARGV[5], 2147483647, ARGV[2])) do
  mine[row[1]] = true
end

local n = tonumber(ARGV[3])
local pos = 7
local skipped = 0
local acks = {}
local per_key = {} -- buffer index -> items, in event order
local order = {}   -- buffer indexes in first-append order
for _ = 1, n do
  local id = ARGV[pos]
  local k = tonumber(ARGV[pos + 1])
  pos = pos + 2
  if mine[id] then
    mine[id] = nil -- an id listed twice is appended once
    for j = 0, k - 1 do
      local i = tonumber(ARGV[pos + 2 * j])
      local items = per_key[i]
      if not items then
        items = {}
        per_key[i] = items
        order[#order + 1] = i
      end
      local item = ARGV[pos + 2 * j + 1]
      local scope, eid = string.match(item, '^%d+|([^|]+)|(.+)$')
      local ekey = scope and (base .. ':s:' .. scope .. ':e:' .. eid)
      -- An agent may have mangled its own entry (another type, a junk `holds`): that must
      -- not fail the batch, which carries other agents' events too.
      if ekey and redis.call('TYPE', ekey)['ok'] == 'hash' then
        redis.pcall('HINCRBY', ekey, 'holds', 1)
        items[#items + 1] = item
      end
    end
    acks[#acks + 1] = id
  else
    skipped = skipped + 1
  end
  pos = pos + 2 * k
end

local appended = 0
local touched = {}
for _, i in ipairs(order) do
  local key = KEYS[2 + i]
  if #per_key[i] > 0 then
    call_chunked('RPUSH', key, nil, per_key[i])
    appended = appended + #per_key[i]
    touched[#touched + 1] = key
  end
end
if #touched > 0 then call_chunked('SADD', KEYS[2], nil, touched) end
if #acks > 0 then call_chunked('XACK', KEYS[1], ARGV[1], acks) end
return {appended, skipped}
