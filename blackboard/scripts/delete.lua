-- delete.lua: remove one entry and every index member of it, and publish `deleted`.
--
-- KEYS (as _lib.lua): [1] scope prefix, [2] ix, [3] tags, [4] keys, [5] exp, [6] evict,
--   [7] feed; derived from [1] (see _lib.lua): INBOX, RETIRED, FLOWMARK, CFG, PSCOPES, PTTL, PPRUNE,
--   prefix..'e:'..id, prefix..'tag:'..tag.
-- ARGV: [1] entry id, [2] scope id, [3] expected version ('' = any), [4] (optional)
--   'merged' when the dedupe job removes a duplicate: counted in REMOVED (pool statistics);
--   an explicit delete is not.
-- Returns: the feed event id, or false when no such entry exists (deleting twice is harmless).
--   A retired entry (evicted or expired, kept for the dataflow) is deleted with no event:
--   readers already had its `evicted`/`expired` one.
-- Errors: 'VERSION_CONFLICT <expected> <actual>'.

local id, scope = ARGV[1], ARGV[2]
do local bad = check_scope(scope); if bad then return bad end end
local cfg = load_cfg(CFG)
local now = now_ms()
want_scope_types()
want_entry_types(id)
if ARGV[3] ~= '' then
  local v = redis.call('HGET', KEYS[1] .. 'e:' .. id, 'version')
  if v and tonumber(v) ~= tonumber(ARGV[3]) then
    return redis.error_reply('VERSION_CONFLICT ' .. ARGV[3] .. ' ' .. v)
  end
end
local reason = nil
if ARGV[4] == 'merged' then reason = 'merged' end
local ev = remove_entry(cfg, id, 'deleted', now, scope, reason)
if ev then reschedule_ttl(scope) end
return ev
