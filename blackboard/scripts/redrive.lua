-- redrive: put one dead-lettered bus event back on its bus, for the group that failed on
-- it only, and delete the dead letter; an operator's action (service or admin user).
--
-- KEYS: [1] partition dlq, [2] partition bus, [3] the event's entry hash (tags are read
--   from it, as the relay builds them; [] when the entry is gone).
-- ARGV: [1] dlq stream id, [2] the scope the caller read from that dead letter, [3] the
--   entry id it read (both checked again here: the caller derived KEYS[3] from them).
-- Returns: {bus stream id, group} or false when there is no such dead letter (another
--   operator re-drove it first: it is re-driven once).
--
-- The new bus event carries `only` = the failed group: every other group's reader acks it
-- without handling it (blackboard/consumer.py), so a role that handled the event the first
-- time never consolidates it twice.
local rows = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #rows == 0 then return false end
local f = {}
local raw = rows[1][2]
for i = 1, #raw, 2 do f[raw[i]] = raw[i + 1] end
if f['scope'] ~= ARGV[2] or f['entry'] ~= ARGV[3] or not f['group'] or f['type'] == nil then
  return redis.error_reply('BAD_SCOPE dead letter ' .. ARGV[1] .. ' changed or has no event')
end
local tags = '[]'
if redis.call('TYPE', KEYS[3])['ok'] == 'hash' then
  tags = redis.call('HGET', KEYS[3], 'tags') or '[]'
end
local id = redis.call('XADD', KEYS[2], '*', 'scope', f['scope'], 'type', f['type'],
  'entry', f['entry'], 'version', f['version'] or '0', 'tags', tags, 'at', f['at'] or '0',
  'only', f['group'])
redis.call('XDEL', KEYS[1], ARGV[1])
return {id, f['group']}
