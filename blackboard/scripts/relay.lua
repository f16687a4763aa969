#!lua
-- relay.lua: move content events from the partition inbox to the partition bus, each one
-- verified against the entry it names (service user only).
--
-- KEYS: [1] inbox (list of '<scope>|<entry id>|<version>', RPUSHed by the mutation scripts),
--   [2] relaying (list: items a relay of an earlier version took with BLMOVE and did not
--   move; they are older than the inbox's; relays now wait without taking any), [3] bus.
--   Derived from KEYS[3] (same slot): entry hashes 'bb:{pN}:s:<scope>:e:<entry id>'.
-- ARGV: [1] at most this many items from the inbox.
-- Returns: {relayed, stale, invalid, items left in the inbox, traceparents}. Stale: a version
--   already relayed (an update collapsed into a newer one, or a replay). Invalid: no such
--   entry in this partition, a version the entry never had, a malformed item (forged, or a
--   bug). Traceparents: the trace context (entry field `tp`, see write.lua) of each relayed
--   event that carries one, for the relay's spans (blackboard/tracing.py); the bus event's
--   `traceparent` field holds it, only when well-formed (an agent may write anything into
--   its own entry hash).
--
-- An item is relayed when its entry exists in this partition (live or retired), its version
-- is at most the entry's newest content version `cver`, and that version has not been
-- relayed yet; the bus event is built from the entry (type, version, tags, time), never from
-- the item. So an agent, which may append anything to the inbox, can at most make an entry's
-- current content reach the bus early: a forged, replayed or stale item is dropped, and no
-- item can make the workers consolidate anything twice. `relayed` and `relayed_id` (the bus
-- id) are stamped on the entry for the dataflow hold (_flow.lua).
-- Nothing is dropped for want of room: Redis refuses the whole call while it is over
-- maxmemory (the '#!lua' line), and a failing XADD or HSET (never an item's fault) fails the
-- call rather than the item, so the items stay in the inbox (or `relaying`) for the next
-- call; those relayed before the failure are then stale, never relayed twice.

local base = string.sub(KEYS[3], 1, -5) -- 'bb:{pN}' of 'bb:{pN}:bus'
-- As in _lib.lua (this script is sent with _flow.lua only).
local TRACEPARENT = '^00%-' .. string.rep('%x', 32) .. '%-' .. string.rep('%x', 16) .. '%-%x%x$'
local items = redis.call('LRANGE', KEYS[2], 0, -1)
local from_inbox = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
for _, it in ipairs(from_inbox) do items[#items + 1] = it end

-- Reads only: -> 'invalid' | 'stale' | 'relay', and for 'relay' the entry's key and fields.
local function check_one(item)
  local scope, id, v = string.match(item, '^([%w_.:-]+)|([%w_-]+)|(%d+)$')
  if not scope or #item > 400 then return 'invalid' end
  local ekey = base .. ':s:' .. scope .. ':e:' .. id
  if redis.call('TYPE', ekey)['ok'] ~= 'hash' then return 'invalid' end
  local f = redis.call('HMGET', ekey, 'cver', 'relayed', 'tags', 'updated_at', 'tp')
  local function count(x) return x and string.match(x, '^%d+$') and tonumber(x) end
  local cver, relayed = count(f[1]), count(f[2] or '0')
  if not cver or not relayed or tonumber(v) > cver then return 'invalid' end
  if relayed >= cver then return 'stale' end
  local tp = f[5]
  if tp and not string.match(tp, TRACEPARENT) then tp = nil end
  return 'relay', {ekey, scope, id, cver, f[3] or '[]', f[4] or '0', tp}
end

local n = {relayed = 0, stale = 0, invalid = 0}
local traces = {}
for _, item in ipairs(items) do
  -- An entry an agent mangled with raw commands (its own) must not wedge the partition.
  local ok, what, e = pcall(check_one, item)
  if not ok then what = 'invalid' end
  if what == 'relay' then
    -- Not under pcall: a write that fails here is the server's trouble, not the item's.
    local typ = 'updated'
    if e[4] == 1 then typ = 'written' end
    local bid
    if e[7] then
      bid = redis.call('XADD', KEYS[3], '*', 'scope', e[2], 'type', typ, 'entry', e[3],
        'version', e[4], 'tags', e[5], 'at', e[6], 'traceparent', e[7])
      traces[#traces + 1] = e[7]
    else
      bid = redis.call('XADD', KEYS[3], '*', 'scope', e[2], 'type', typ, 'entry', e[3],
        'version', e[4], 'tags', e[5], 'at', e[6])
    end
    redis.call('HSET', e[1], 'relayed', e[4], 'relayed_id', bid)
    what = 'relayed'
  end
  n[what] = n[what] + 1
end
redis.call('DEL', KEYS[2])
if #from_inbox > 0 then redis.call('LTRIM', KEYS[1], #from_inbox, -1) end
return {n.relayed, n.stale, n.invalid, redis.call('LLEN', KEYS[1]), traces}
