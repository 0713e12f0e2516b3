"""The session log's Lua scripts: each decision and its writes in one atomic step.

Why Lua: the lease check, the expected seq, the batch index and the writes of a commit must
see one state of the session, and one EVALSHA is one round trip. Every script touches only
the keys of one session (one hash tag, one cluster slot; the per-user index only outside a
cluster). Time is the Redis server's ``TIME`` (microseconds) unless the caller passes one
(``ARGV[1]``, for an injected clock), so every client judges a lease by the same clock.

KEYS, in ``SessionKeys.log_keys()`` order: 1 head (hash: ``s`` seq, ``e`` epoch, ``o``
owner, ``u`` lease_until in microseconds, ``c`` commit_id, ``k`` checkpoint_seq), 2 seq
index (zset: member and score the first seq of a commit), 3 bytes (hash first -> the
commit's bytes), 4 records (hash first -> "last digest batch_id"), 5 batch index (hash
batch_id -> first), 6 sealed owners (set) [, 7 the user's log index].

Every answer that names the head carries it as six values (seq, epoch, owner or nil,
lease_until us, commit_id or nil, checkpoint_seq); the caller replays the decision with
``hookagent.sessionlog.rules`` on what the script saw, so both agree or the call fails.
"""

from __future__ import annotations

from .lua import NUMBERS, Script

_COMMON = (
    NUMBERS
    + """
local function fmt(n) return string.format('%d', n) end  -- exact: tostring is %.14g
local function clock()
  if ARGV[1] ~= '' then return tonumber(ARGV[1]) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function read_head(key)  -- the six head values, or nil when a number is damaged
  local h = redis.call('HMGET', key, 's', 'e', 'o', 'u', 'c', 'k')
  local s, e, u, k = ctr(h[1]), ctr(h[2]), ctr(h[4]), ctr(h[6])
  if not (s and e and u and k) then return nil end
  return {s, e, h[3] or false, u, h[5] or false, k}
end
local function holds(h, epoch, owner, now)
  return fmt(h[2]) == epoch and h[3] == owner and h[4] > now
end
"""
)

# ARGV: 1 now, 2 owner, 3 lease us -> {'OK'|'SEALED'|'HELD', now, head after (OK) or as seen}
ACQUIRE = Script(
    _COMMON
    + """
local now = clock()
local h = read_head(KEYS[1])
if not h then return {'CORRUPT'} end
local owner = ARGV[2]
if redis.call('SISMEMBER', KEYS[6], owner) == 1 then
  return {'SEALED', now, h[1], h[2], h[3], h[4], h[5], h[6]}
end
if h[3] and h[3] ~= owner and h[4] > now then
  return {'HELD', now, h[1], h[2], h[3], h[4], h[5], h[6]}
end
local e, u = h[2] + 1, now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 's', fmt(h[1]), 'e', fmt(e), 'o', owner, 'u', fmt(u), 'k', fmt(h[6]))
return {'OK', now, h[1], e, owner, u, h[5], h[6]}
"""
)

# ARGV: 1 now, 2 epoch, 3 owner, 4 lease us -> {'OK'|'FENCED', now, head}
RENEW = Script(
    _COMMON
    + """
local now = clock()
local h = read_head(KEYS[1])
if not h then return {'CORRUPT'} end
if holds(h, ARGV[2], ARGV[3], now) then
  h[4] = now + tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], 'u', fmt(h[4]))
  return {'OK', now, h[1], h[2], h[3], h[4], h[5], h[6]}
end
return {'FENCED', now, h[1], h[2], h[3], h[4], h[5], h[6]}
"""
)

# ARGV: 1 epoch, 2 owner -> 1 released, 0 not the holder, -1 damaged head
RELEASE = Script(
    _COMMON
    + """
local h = read_head(KEYS[1])
if not h then return -1 end
if fmt(h[2]) == ARGV[1] and h[3] == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'o')
  redis.call('HSET', KEYS[1], 'u', '0')
  return 1
end
return 0
"""
)

# KEYS: head, sealed ; ARGV: 1 owner -> 1, or -1 damaged head (nothing written)
SEAL = Script(
    _COMMON
    + """
local h = read_head(KEYS[1])
if not h then return -1 end
redis.call('SADD', KEYS[2], ARGV[1])
if h[3] == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'o')
  redis.call('HSET', KEYS[1], 'u', '0')
end
return 1
"""
)

# ARGV: 1 now, 2 epoch, 3 owner, 4 batch_id, 5 expected seq (-1: matches none), 6 digest,
#       7 event count, 8 checkpoint offset in the batch (1-based, 0 = none), 9 finish (0|1),
#       10 touch on a duplicate (0|1: a write, so that a WAIT after it proves the replicas
#       hold the original commit), 11 index member, 12 the commit's bytes
# -> {status, now, prior first, prior last, prior digest, head seen (6)[, head after (6)]}
#    status: OK | DUP | CONFLICT | FENCED | STALE ; or {'CORRUPT', what}
# The order is plan_commit's: a batch the head reached, then the lease, then the seq.
COMMIT = Script(
    _COMMON
    + """
local now = clock()
local h = read_head(KEYS[1])
if not h then return {'CORRUPT', 'head'} end
local s, bid, digest = h[1], ARGV[4], ARGV[6]
local pf = redis.call('HGET', KEYS[5], bid)
if pf then
  local first, rec = int(pf), redis.call('HGET', KEYS[4], pf)
  if not first then return {'CORRUPT', 'batch'} end
  local last, dig, rbid
  if rec then last, dig, rbid = string.match(rec, '^(%d+) (%x+) (.*)$') end
  last = int(last)
  if first <= s and not (last and rbid) then return {'CORRUPT', 'record'} end
  if last and rbid == bid and last <= s then  -- reached by the head: a prior
    local status = 'DUP'
    if dig ~= digest then status = 'CONFLICT'
    elseif ARGV[10] == '1' then redis.call('HSET', KEYS[1], 's', fmt(s)) end
    return {status, now, first, last, dig, h[1], h[2], h[3], h[4], h[5], h[6]}
  end
end
if not holds(h, ARGV[2], ARGV[3], now) then
  return {'FENCED', now, 0, 0, false, h[1], h[2], h[3], h[4], h[5], h[6]}
end
if ARGV[5] ~= fmt(s) then
  return {'STALE', now, 0, 0, false, h[1], h[2], h[3], h[4], h[5], h[6]}
end
local first, last = s + 1, s + tonumber(ARGV[7])
-- orphans (commits the head never reached) at or past this seq: dropped, then overwritten
for _, f in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], first, '+inf')) do
  local rec = redis.call('HGET', KEYS[4], f)
  local ob = rec and string.match(rec, '^%d+ %x+ (.*)$')
  if ob and redis.call('HGET', KEYS[5], ob) == f then redis.call('HDEL', KEYS[5], ob) end
  redis.call('HDEL', KEYS[3], f)
  redis.call('HDEL', KEYS[4], f)
  redis.call('ZREM', KEYS[2], f)
end
local fs = fmt(first)
redis.call('HSET', KEYS[3], fs, ARGV[12])  -- the commit first, the head after it
redis.call('HSET', KEYS[4], fs, fmt(last) .. ' ' .. digest .. ' ' .. bid)
redis.call('ZADD', KEYS[2], first, fs)
redis.call('HSET', KEYS[5], bid, fs)
local k, o, u = h[6], h[3], h[4]
if tonumber(ARGV[8]) > 0 then k = first + tonumber(ARGV[8]) - 1 end
if ARGV[9] == '1' then  -- the writer's last commit: the lease ends, the owner is sealed
  o, u = false, 0
  redis.call('HDEL', KEYS[1], 'o')
  redis.call('SADD', KEYS[6], ARGV[3])
end
redis.call('HSET', KEYS[1], 's', fmt(last), 'e', fmt(h[2]), 'u', fmt(u), 'c', bid, 'k', fmt(k))
if KEYS[7] and s == 0 then redis.call('ZADD', KEYS[7], 0, ARGV[11]) end
return {'OK', now, 0, 0, false, h[1], h[2], h[3], h[4], h[5], h[6],
        last, h[2], o, u, bid, k}
"""
)

# KEYS: head, seq index, bytes, records ; ARGV: 1 after seq, 2 most commits (-1: all)
# -> {'OK', head (6), n, n firsts, n records, n bytes (nil when missing)} | {'CORRUPT'}
# Only the commits from the one holding seq after+1 up to the head's seq: never past the
# head (an orphan stays unread), never the log before ``after``.
READ = Script(
    _COMMON
    + """
local h = read_head(KEYS[1])
if not h then return {'CORRUPT'} end
local out = {'OK', h[1], h[2], h[3], h[4], h[5], h[6]}
local after = tonumber(ARGV[1])
if after >= h[1] then
  out[8] = 0
  return out
end
local lo = redis.call('ZREVRANGEBYSCORE', KEYS[2], after + 1, '-inf', 'LIMIT', 0, 1)[1]
local firsts = redis.call('ZRANGEBYSCORE', KEYS[2], lo or '-inf', h[1], 'LIMIT', 0, ARGV[2])
out[8] = #firsts
for _, f in ipairs(firsts) do out[#out + 1] = f end
for _, key in ipairs({KEYS[4], KEYS[3]}) do
  local i = 1
  while i <= #firsts do  -- chunked: unpack is bounded by Lua's stack
    local j = math.min(i + 999, #firsts)
    local got = redis.call('HMGET', key, unpack(firsts, i, j))
    for x = 1, j - i + 1 do out[#out + 1] = got[x] end
    i = j + 1
  end
end
return out
"""
)

# KEYS: head, seq index, bytes, records ; ARGV: after seqs
# -> {'OK', head (6), n, then per after seq: first, record, bytes (nil: no commit)} | {'CORRUPT'}
# For each seq, what READ with at most one commit reads: the commit holding after+1, never
# past the head (a cold load's history segments: one round trip for all of them).
READ_AT = Script(
    _COMMON
    + """
local h = read_head(KEYS[1])
if not h then return {'CORRUPT'} end
local out = {'OK', h[1], h[2], h[3], h[4], h[5], h[6], #ARGV}
for _, a in ipairs(ARGV) do
  local after = tonumber(a)
  local f = false
  if after < h[1] then
    local lo = redis.call('ZREVRANGEBYSCORE', KEYS[2], after + 1, '-inf', 'LIMIT', 0, 1)[1]
    f = redis.call('ZRANGEBYSCORE', KEYS[2], lo or '-inf', h[1], 'LIMIT', 0, 1)[1] or false
  end
  out[#out + 1] = f
  out[#out + 1] = f and redis.call('HGET', KEYS[4], f) or false
  out[#out + 1] = f and redis.call('HGET', KEYS[3], f) or false
end
return out
"""
)

# KEYS: the six log keys [, index] ; ARGV: 1 index member -> how many keys existed
DELETE = Script(
    """
local n = redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
if KEYS[7] then redis.call('ZREM', KEYS[7], ARGV[1]) end
return n
"""
)
