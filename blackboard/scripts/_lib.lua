-- _lib.lua: helpers prepended (after _flow.lua) to every mutation script (not a script of its own).
--
-- Declared KEYS are only keys of the scope itself (see ScopeKeys.script_keys). EVALSHA's
-- key-spec is "RW access update", so Redis ACLs demand read AND write permission on every
-- declared key: declaring the partition bus or the scope's cfg hash would force a confined
-- agent user to hold %RW~ on them (it could then XRANGE the bus or rewrite its own limits).
--   KEYS[1] scope prefix 'bb:{pN}:s:<scope>:'  KEYS[2] ix  KEYS[3] tags  KEYS[4] keys
--   KEYS[5] exp  KEYS[6] evict  KEYS[7] feed
-- Derived from KEYS[1] (same hash tag, so the same slot: Redis Cluster allows a script to
-- reach undeclared keys of the slot of its declared keys). Derived rather than passed in
-- ARGV, so a hostile caller cannot point the script at another cfg hash or another stream;
-- each command on them is still ACL-checked on its own (XADD/SADD/ZADD/ZREM need only
-- write permission, HMGET only read):
--   PREFIX .. 'e:' .. id      entry hash
--   PREFIX .. 'tag:' .. tag   tag set
--   INBOX    'bb:{pN}:inbox'         content events for the relay (RPUSH only)
--   RETIRED  'bb:{pN}:retired'       entries kept for the dataflow (SADD only)
--   'bb:{pN}:flowmark'               bus id every consumer group has passed (GET, in _flow.lua)
--   'bb:{pN}:indexing'               set while the index role runs (EXISTS only)
--   'bb:{pN}:unembedded'             entries waiting for a vector (ZADD NX only)
--   CFG      'bb:{pN}:cfg:<scope>'   the scope's enforced limits (HMGET only)
--   PSCOPES  'bb:{pN}:scopes'        partition scope set (SADD only)
--   PTTL     'bb:{pN}:ttl'           partition ttl schedule (ZADD/ZREM)
--   PPRUNE   'bb:{pN}:prune'         partition prune schedule (ZADD/ZREM)
--   USAGE    PREFIX .. 'usage'       the scope's quota counter: hash {bytes} (HGET/HINCRBY)
--   REMOVED  PREFIX .. 'removed'     what maintenance removed from the scope, ever: hash
--            {expired, decayed, capacity, merged} (HMGET/HINCRBY; pool statistics)
--   OWNED    'bb:{pN}:s:<owner>:owned'  the owner's (agent:<a> / team:<t>) counters in this
--            partition: hash {entries, bytes} (HMGET/HINCRBY); false for scopes no agent owns
--   OCFG     'bb:{pN}:cfg:<owner>'   the owner's quotas in this partition (HMGET only)
-- SCOPE is the scope id parsed from KEYS[1]; scripts refuse an ARGV scope id that differs
-- ('BAD_SCOPE'), so an event can never name a scope other than the one written.

local PREFIX = KEYS[1]
local BASE, SCOPE = string.match(PREFIX, '^([^{}]*{p%d+}):s:([^{}]+):$')
if not BASE then return redis.error_reply('BAD_SCOPE prefix ' .. tostring(PREFIX)) end
local INBOX = BASE .. ':inbox'
local RETIRED = BASE .. ':retired'
local CFG = BASE .. ':cfg:' .. SCOPE
local PSCOPES = BASE .. ':scopes'
local PTTL = BASE .. ':ttl'
local PPRUNE = BASE .. ':prune'
-- Quotas (docs/security.md "Quotas"): live entries and their bytes (value, metadata, tags,
-- source as stored), per scope and per owner and partition. Every script that adds,
-- changes or removes a live entry moves the counters in the same script; `check --repair`
-- rebuilds them from the entries.
local USAGE = PREFIX .. 'usage'
-- Pool statistics (issue 27 item 5): entries maintenance removed, by reason, counted by
-- remove_entry in the script that removes them. Explicit deletes (forget) are not counted.
local REMOVED = PREFIX .. 'removed'
local REMOVAL_REASONS = {'expired', 'decayed', 'capacity', 'merged'}
local OWNER = string.match(SCOPE, '^(agent:[^:]+)') or string.match(SCOPE, '^(team:[^:]+)')
local OWNED = OWNER and (BASE .. ':s:' .. OWNER .. ':owned') or false
local OCFG = OWNER and (BASE .. ':cfg:' .. OWNER) or false
-- A W3C traceparent (version 00) as blackboard/tracing.py makes it: stored with an entry
-- (`tp`) and relayed onto its bus event only when it matches.
local TRACEPARENT = '^00%-' .. string.rep('%x', 32) .. '%-' .. string.rep('%x', 16) .. '%-%x%x$'
local DEFAULT_SCOPE_BYTES = 67108864      -- 64 MiB per scope
local DEFAULT_OWNER_ENTRIES = 1000000     -- per owner and partition
local DEFAULT_OWNER_BYTES = 536870912     -- 512 MiB per owner and partition

local function check_scope(scope)
  if scope ~= SCOPE then
    return redis.error_reply('BAD_SCOPE ' .. tostring(scope) .. ' is not ' .. SCOPE)
  end
  return nil
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function load_cfg(cfgkey)
  local v = redis.call('HMGET', cfgkey, 'max_entries', 'on_full', 'max_entry_bytes', 'ttl_ms',
    'decay_rate', 'decay_tick_ms', 'evict_threshold', 'feed_maxlen', 'max_bytes')
  return {
    max_entries = tonumber(v[1]) or 0,
    on_full = v[2] or 'evict',
    max_entry_bytes = tonumber(v[3]) or 1048576,
    ttl_ms = tonumber(v[4]) or 0,
    decay_rate = tonumber(v[5]) or 0,
    decay_tick_ms = tonumber(v[6]) or 3600000,
    evict_threshold = tonumber(v[7]) or 0.1,
    feed_maxlen = tonumber(v[8]) or 10000,
    max_bytes = tonumber(v[9]) or DEFAULT_SCOPE_BYTES,
  }
end

-- Per-tick retention factor of the memory-pool formula:
--   s(t+1) = s(t) * (1 - rate / (1 + ln(1 + reinforcements)))
local function retention(cfg, reinforcements)
  return 1 - cfg.decay_rate / (1 + math.log(1 + reinforcements))
end

-- Strength at time `now` in closed form, ticks counted continuously.
local function strength_now(cfg, s, s_at, reinforcements, now)
  if cfg.decay_rate <= 0 or now <= s_at then return s end
  local q = retention(cfg, reinforcements)
  if q <= 0 then return 0 end
  return s * q ^ ((now - s_at) / cfg.decay_tick_ms)
end

-- Score in the evict zset. Decaying scopes: the time (ms) the strength crosses the threshold,
-- so pruning reads only what is due. Non-decaying scopes: the strength itself, so capacity
-- eviction still takes the weakest first (ties by id, i.e. oldest first).
local function evict_score(cfg, s, s_at, reinforcements)
  if cfg.decay_rate <= 0 then return s end
  if s <= cfg.evict_threshold then return s_at end
  local q = retention(cfg, reinforcements)
  if q <= 0 then return s_at end
  if q >= 1 then return 9007199254740991 end
  return s_at + math.floor(cfg.decay_tick_ms * math.log(cfg.evict_threshold / s) / math.log(q) + 0.5)
end

-- Publish an event on the scope's feed. Content events (written, updated) also go to the
-- partition inbox as '<scope>|<id>|<version>', from which the relay (a service user) builds
-- the bus event out of the entry itself: an agent may only append to the inbox, so it can
-- neither trim, block nor reorder the bus, and a forged item cannot say anything the entry
-- does not. `cver` records the version of the newest content event (reinforce also bumps
-- `version`, but changes no content the dataflow consumes).
local function emit(cfg, typ, id, version, tags_json, at, scope)
  local ev = redis.call('XADD', KEYS[7], 'MAXLEN', '~', cfg.feed_maxlen, '*',
    'scope', scope, 'type', typ, 'entry', id, 'version', version, 'tags', tags_json, 'at', at)
  if typ == 'written' or typ == 'updated' then
    redis.call('RPUSH', INBOX, scope .. '|' .. id .. '|' .. version)
    redis.call('HSET', KEYS[1] .. 'e:' .. id, 'cver', version)
    -- The index role finds what lacks a vector here, not on the bus: a lagging model
    -- then holds neither bus events nor retired entries (NX: the age of the oldest wait).
    if redis.call('EXISTS', BASE .. ':indexing') == 1 then
      redis.call('ZADD', BASE .. ':unembedded', 'NX', at, scope .. '|' .. id)
    end
  end
  return ev
end

-- All-or-nothing: Redis never rolls a script back, so every command that could fail after
-- the first write must be ruled out before it. A confined agent can give its own keys any
-- type with raw commands, and push its own feed's last id to the maximum.
local function want_type(key, typ)
  local got = redis.call('TYPE', key)['ok']
  if got ~= 'none' and got ~= typ then
    error({err = 'WRONG_TYPE ' .. key .. ' holds a ' .. got .. ', not a ' .. typ})
  end
end


-- A quota counter HINCRBY can move: absent, or an integer well inside 2^53 (a confined
-- agent may HSET its own counters to anything; HINCRBY would then fail mid-script).
local function want_counter(key, field)
  local v = redis.call('HGET', key, field)
  if v and (not string.match(v, '^-?%d+$') or #v > 15) then
    error({err = 'WRONG_TYPE ' .. key .. ' has an unreadable ' .. field .. ' counter'})
  end
end

local function want_counters()
  want_type(USAGE, 'hash')
  want_counter(USAGE, 'bytes')
  want_type(REMOVED, 'hash')
  for _, r in ipairs(REMOVAL_REASONS) do want_counter(REMOVED, r) end
  if OWNED then
    want_type(OWNED, 'hash')
    want_counter(OWNED, 'entries')
    want_counter(OWNED, 'bytes')
  end
end

-- Bytes an entry counts against the quotas, as stored.
local function entry_bytes(ekey)
  local n = 0
  for _, f in ipairs({'value', 'metadata', 'tags', 'source'}) do
    n = n + redis.call('HSTRLEN', ekey, f)
  end
  return n
end

-- Refuse, before any write, a change that adds d_entries live entries and d_bytes bytes
-- (the entry then holding `size` bytes) when it would take the scope or its owner past a
-- quota. 'QUOTA_EXCEEDED <quota> <limit> <in use> <this change> <entry alone>'; the entry
-- alone over the limit means it could never fit. A limit of 0 is no limit.
local function want_quota(cfg, d_entries, d_bytes, size)
  local function over(quota, limit, use, need, alone)
    if limit > 0 and need > 0 and use + need > limit then
      error({err = 'QUOTA_EXCEEDED ' .. quota .. ' ' .. limit .. ' ' .. use .. ' ' .. need ..
        ' ' .. alone})
    end
  end
  local use = tonumber(redis.call('HGET', USAGE, 'bytes') or '0')
  over('scope_bytes', cfg.max_bytes, use, d_bytes, size)
  if OWNED then
    local kind = string.match(OWNER, '^(%a+):')
    local q = redis.call('HMGET', OCFG, 'quota_entries', 'quota_bytes')
    local u = redis.call('HMGET', OWNED, 'entries', 'bytes')
    over(kind .. '_entries', tonumber(q[1]) or DEFAULT_OWNER_ENTRIES, tonumber(u[1] or '0'),
      d_entries, 1)
    over(kind .. '_bytes', tonumber(q[2]) or DEFAULT_OWNER_BYTES, tonumber(u[2] or '0'), d_bytes,
      size)
  end
end

local function count_usage(d_entries, d_bytes)
  if d_bytes ~= 0 then redis.call('HINCRBY', USAGE, 'bytes', d_bytes) end
  if OWNED then
    if d_entries ~= 0 then redis.call('HINCRBY', OWNED, 'entries', d_entries) end
    if d_bytes ~= 0 then redis.call('HINCRBY', OWNED, 'bytes', d_bytes) end
  end
end

-- The scope's own index keys, and room for new ids on its feed (XADD '*' fails once the
-- last id's milliseconds are at the maximum; only raw XADDs with explicit ids get there).
local function want_scope_types()
  want_type(KEYS[2], 'zset')
  want_type(KEYS[3], 'hash')
  want_type(KEYS[4], 'hash')
  want_type(KEYS[5], 'zset')
  want_type(KEYS[6], 'zset')
  want_type(KEYS[7], 'stream')
  if redis.call('EXISTS', KEYS[7]) == 1 then
    local info = redis.call('XINFO', 'STREAM', KEYS[7])
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then
        if string.sub(info[i + 1], 1, 21) == '18446744073709551615-' then
          error({err = 'FEED_EXHAUSTED ' .. KEYS[7] .. ' has no room for new ids'})
        end
        break
      end
    end
  end
  want_counters()
end

local function want_tag_types(tags)
  for _, tag in ipairs(tags) do want_type(KEYS[1] .. 'tag:' .. tag, 'set') end
end

-- An existing entry: its hash, and the tag sets its stored tags name.
local function want_entry_types(id)
  local ekey = KEYS[1] .. 'e:' .. id
  want_type(ekey, 'hash')
  local t = redis.call('HGET', ekey, 'tags')
  if t then
    local ok, tags = pcall(cjson.decode, t)
    if not ok or type(tags) ~= 'table' then
      error({err = 'WRONG_TYPE ' .. ekey .. ' has unreadable tags'})
    end
    want_tag_types(tags)
  end
end

local function add_tags(id, tags)
  for _, t in ipairs(tags) do
    if redis.call('SADD', KEYS[1] .. 'tag:' .. t, id) == 1 then
      redis.call('HINCRBY', KEYS[3], t, 1)
    end
  end
end

local function remove_tags(id, tags)
  for _, t in ipairs(tags) do
    if redis.call('SREM', KEYS[1] .. 'tag:' .. t, id) == 1 then
      if redis.call('HINCRBY', KEYS[3], t, -1) <= 0 then redis.call('HDEL', KEYS[3], t) end
    end
  end
end

-- Schedule the scope in the partition-wide ttl / prune zsets (earliest time wins).
local function schedule_ttl(scope, at)
  redis.call('ZADD', PTTL, 'LT', at, scope)
end

local function reschedule_ttl(scope)
  local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  if first[2] then redis.call('ZADD', PTTL, first[2], scope)
  else redis.call('ZREM', PTTL, scope) end
end

-- Remove an entry from every index and emit `typ` (deleted/expired/evicted). An entry
-- evicted or expired while the dataflow still needs it is retired, not deleted: readers
-- no longer see it, and the hash stays (listed in RETIRED) until every edge has taken it
-- in and a reaper deletes it. Capacity thus bounds what readers see, never what the
-- layers above receive. `reason` (one of REMOVAL_REASONS, or nil for an explicit delete)
-- is counted in REMOVED. Returns the feed event id, or false when the entry does not exist.
local function remove_entry(cfg, id, typ, now, scope, reason)
  local ekey = KEYS[1] .. 'e:' .. id
  local f = redis.call('HMGET', ekey, 'tags', 'key', 'version', 'retired')
  if not f[3] then return false end
  if f[4] then
    -- already retired: only an explicit delete has anything left to do
    if typ == 'deleted' then redis.call('DEL', ekey) end
    return false
  end
  local bytes = entry_bytes(ekey)
  -- The first write frees (ZREM): over maxmemory Redis refuses a flagless script's first
  -- command that may grow memory (HINCRBY), never a later one, and removing must work
  -- there (expiry, pruning and deletes are how memory is freed).
  redis.call('ZREM', KEYS[2], id)
  remove_tags(id, cjson.decode(f[1]))
  if f[2] and f[2] ~= '' and redis.call('HGET', KEYS[4], f[2]) == id then
    redis.call('HDEL', KEYS[4], f[2])
  end
  redis.call('ZREM', KEYS[5], id)
  redis.call('ZREM', KEYS[6], id)
  count_usage(-1, -bytes)
  if reason then redis.call('HINCRBY', REMOVED, reason, 1) end
  if typ == 'deleted' or reapable(BASE, ekey) then
    redis.call('DEL', ekey)
  else
    redis.call('HSET', ekey, 'retired', typ, 'retired_at', now)
    redis.call('SADD', RETIRED, scope .. '|' .. id)
  end
  return emit(cfg, typ, id, f[3], f[1], now, scope)
end

local function flat_entry(status, id)
  local out = {status, id}
  local h = redis.call('HGETALL', KEYS[1] .. 'e:' .. id)
  for i = 1, #h do out[#out + 1] = h[i] end
  return out
end
