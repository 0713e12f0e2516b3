"""The server-side scripts and their runner (EVALSHA, reloaded by EVAL on NOSCRIPT).

Why Lua: a compare-and-set must read the version and write in one atomic step on the server,
and one EVALSHA is one round trip. Every script touches only keys of one hash tag (one cluster
slot). The script cache is lost on restart and failover; ``Script.run`` then sends the
source with EVAL once, which runs it and caches it again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis.exceptions import NoScriptError

# Stored numbers are read through these: a field that is present but not an integer in
# [0, 2^53) is damage, and the scripts then answer CORRUPT and write nothing (reading it as 0
# would let a save overwrite a damaged slot, or a garbage epoch switch fencing off).
NUMBERS = """
local function int(x)  -- an integer in [0, 2^53), or nil (absent, or not such a number)
  local n = tonumber(x)
  if n and n >= 0 and n < 9007199254740992 and n == math.floor(n) then return n end
  return nil
end
local function ctr(x)  -- a counter: absent is 0, present must be an int
  if not x then return 0 end
  return int(x)
end
"""

# The lineage ring (head field `r`): the first 8 hex digits of the write ids of the last
# RING versions, oldest first, newest last (so its last entry is the head's `w`). A store
# instance remembers the (incarnation, version, write id) it last saw acknowledged or loaded
# and sends it; `lineage` answers whether that write is still in the slot's history: 'ok',
# 'lost' (another write holds that version, or the version is gone) or 'deep' (the version
# is older than the ring reaches: it cannot be told, and the store reports it as a
# regression rather than pass it silently). A ring whose last entry is not the head's `w`
# was left behind by a writer that does not keep it: it is restarted, never trusted.
LINEAGE = """
local RING = 128
local function ring_of(r, w)  -- the valid ring of a head, or '' (absent or left behind)
  if r and #r >= 8 and string.sub(r, -8) == string.sub(w or '', 1, 8) then return r end
  return ''
end
local function lineage(inc, v, w, ring, sinc, sv, swid)
  if sinc == '' then return 'ok' end
  sinc, sv = tonumber(sinc), tonumber(sv)
  if inc > sinc then return 'ok' end  -- deleted and created again since: not a loss
  if inc < sinc or v < sv then return 'lost' end
  if v == sv then
    if w == swid then return 'ok' end
    return 'lost'
  end
  local back, k = v - sv, #ring / 8
  if back >= k then return 'deep' end
  local at = (k - back - 1) * 8 + 1
  if string.sub(ring, at, at + 7) == string.sub(swid, 1, 8) then return 'ok' end
  return 'lost'
end
"""

# A stored head is checked before it is used: its numbers (NUMBERS), its encoded sections
# `d` (JSON that decodes to an object, no NUL byte, naming this slot's user and session, with
# an integer schema_version: the save refuses a newer schema than the writer's), its ring,
# and the message list's length against `n`. -> nil, or the CORRUPT answer.
HEAD = """
local function check_head(h, list, uid, sid)
  local v, g, n, inc = int(h[1]), int(h[2]), int(h[3]), int(h[5])
  if not (v and v > 0 and g and n and inc and h[4] and h[6]) then return {'CORRUPT', 'head'} end
  if h[8] and (#h[8] % 8 ~= 0 or #h[8] > RING * 8) then return {'CORRUPT', 'head'} end
  local d = h[7]
  if not d or d == '' or string.find(d, '\\0', 1, true) then return {'CORRUPT', 'sections'} end
  local okj, doc = pcall(cjson.decode, d)
  if not okj or type(doc) ~= 'table' then return {'CORRUPT', 'sections'} end
  if not int(doc['schema_version']) then return {'CORRUPT', 'sections'} end
  if doc['user_id'] ~= uid or doc['session_id'] ~= sid then return {'CORRUPT', 'slot'} end
  local lt = redis.call('TYPE', list)['ok']
  if lt ~= 'list' and lt ~= 'none' then return {'CORRUPT', 'list'} end
  local len = redis.call('LLEN', list)
  if len ~= n then return {'CORRUPT', 'count', n, len} end
  return nil, doc['schema_version']
end
"""

# KEYS: head, list, keyset, meta[, user index -- only when not in a cluster]
# ARGV: 1 expected (-1 = unconditional), 2 mode (a|r), 3 base, 4 fence epoch ('' = none),
#       5 fence owner, 6 encoded sections, 7 ttl ms (0 = none), 8 key name, 9 write id,
#       10 seen incarnation ('' = nothing seen), 11 seen version, 12 seen write id,
#       13 encoded session id (the index member), 14 the writer's schema version,
#       15 user id, 16 session id, 17.. messages
# -> {'OK', v, gen, n, chain, inc, created, replayed} | {'CONFLICT', v, inc}
#    | {'FENCED', ge, fe} | {'REWRITE'} | {'CORRUPT', what[, n, len]} | {'SCHEMA', stored}
#    | {'LOST', v, inc, 'lost'|'deep'}: every check comes before the first write
# Numbers are compared as numbers: Lua's tostring is %.14g, so 1e14 would print as "1e+14".
SAVE = (
    NUMBERS
    + LINEAGE
    + HEAD
    + """
local head, list, keyset, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected, mode, base = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local kname, wid = ARGV[8], ARGV[9]
local h = redis.call('HMGET', head, 'v', 'g', 'n', 'c', 'i', 'w', 'd', 'r')
local m = redis.call('HMGET', meta, 'ge', 'fe', 'fo', 'i:' .. kname, 'g:' .. kname, 'go')
local ge, fe = ctr(m[1]), ctr(m[2])
if not (ge and fe and ctr(m[4]) and ctr(m[5])) then return {'CORRUPT', 'meta'} end
local cur, gen, n, inc, schema = 0, 0, 0, 0, 0
if h[1] then
  local bad
  bad, schema = check_head(h, list, ARGV[15], ARGV[16])
  if bad then return bad end
  cur, gen, n, inc = int(h[1]), int(h[2]), int(h[3]), int(h[5])
elseif redis.call('EXISTS', head) == 1 then
  return {'CORRUPT', 'head'}
elseif redis.call('EXISTS', list) == 1 then
  return {'CORRUPT', 'orphan'}
end
local kt = redis.call('TYPE', keyset)['ok']
if kt ~= 'set' and kt ~= 'none' then return {'CORRUPT', 'keyset'} end
if kt == 'none' and KEYS[5] then
  local it = redis.call('TYPE', KEYS[5])['ok']
  if it ~= 'zset' and it ~= 'none' then return {'CORRUPT', 'index'} end
end
if cur > 0 and h[6] == wid then
  return {'OK', cur, gen, n, h[4], inc, 0, 1}
end
if schema > tonumber(ARGV[14]) then return {'SCHEMA', schema} end
local fe_new = ARGV[4]
if fe_new ~= '' then
  -- the one fence rule: older than the newest epoch recorded (handed out by the gate, or
  -- accepted by a save), or that epoch with another owner than the one it was recorded for
  local e, newest, owner = tonumber(fe_new), fe, m[3]
  if ge > fe then newest, owner = ge, m[6] end
  if e < newest or (e == newest and owner and owner ~= ARGV[5]) then
    return {'FENCED', ge, fe}
  end
end
local ring = ''
if cur > 0 then
  ring = ring_of(h[8], h[6])
  local seen = lineage(inc, cur, h[6], ring, ARGV[10], ARGV[11], ARGV[12])
  if seen ~= 'ok' then return {'LOST', cur, inc, seen} end
elseif ARGV[10] ~= '' and ctr(m[4]) < tonumber(ARGV[10]) then
  return {'LOST', 0, ctr(m[4]), 'lost'}  -- the slot is gone and its creation with it
end
if expected >= 0 and expected ~= cur then return {'CONFLICT', cur, inc} end
if expected > 0 and ARGV[10] ~= '' and tonumber(ARGV[11]) == expected
   and tonumber(ARGV[10]) ~= inc then
  return {'CONFLICT', cur, inc}  -- that version, but of a deleted and recreated slot
end
local chain = h[4] or ''
local append = mode == 'a' and cur > 0 and expected == cur
if append and base > n then return {'REWRITE'} end
if cur > 0 and not (append and base == n) then
  -- rows are about to be dropped: they must be the ones the head certifies (fail closed)
  local old, c, kept = redis.call('LRANGE', list, 0, -1), '', ''
  for i = 1, #old do
    c = redis.sha1hex(c .. old[i])
    if i == base then kept = c end
  end
  if c ~= chain then return {'CORRUPT', 'rows'} end
  if append then
    redis.call('LTRIM', list, 0, base - 1)
    chain, n = kept, base
  else
    redis.call('DEL', list)
    chain, n = '', 0
  end
  gen = redis.call('HINCRBY', meta, 'g:' .. kname, 1)
elseif cur == 0 then
  gen = redis.call('HINCRBY', meta, 'g:' .. kname, 1)
end
if cur == 0 then inc = redis.call('HINCRBY', meta, 'i:' .. kname, 1) end
local first, total = 17, #ARGV
local i = first
while i <= total do
  local j = math.min(i + 999, total)
  redis.call('RPUSH', list, unpack(ARGV, i, j))
  i = j + 1
end
for k = first, total do chain = redis.sha1hex(chain .. ARGV[k]) end
n = n + (total - first + 1)
local v = cur + 1
ring = ring .. string.sub(wid, 1, 8)
if #ring > RING * 8 then ring = string.sub(ring, -RING * 8) end
redis.call('HSET', head, 'v', v, 'g', gen, 'n', n, 'c', chain, 'i', inc, 'w', wid,
           'd', ARGV[6], 'r', ring)
local created = 0
if kt == 'none' then created = 1 end
redis.call('SADD', keyset, kname)
if created == 1 and KEYS[5] then redis.call('ZADD', KEYS[5], 0, ARGV[13]) end
if fe_new ~= '' then redis.call('HSET', meta, 'fe', fe_new, 'fo', ARGV[5]) end
local ttl = tonumber(ARGV[7])
if ttl > 0 then
  redis.call('PEXPIRE', head, ttl)
  redis.call('PEXPIRE', list, ttl)
  redis.call('PEXPIRE', keyset, ttl)
end
return {'OK', v, gen, n, chain, inc, created, 0}
"""
)

# KEYS: head, list, keyset, meta ; ARGV: 1 cached generation (-1 none, 'head' = no
# messages), 2 cached count, 3 ttl, 4 key name, 5 seen incarnation ('' = nothing seen),
# 6 seen version, 7 seen write id, 8 the write id of the cached head ('' = none cached)
# -> {version, incarnation counter, gen, n, chain, incarnation, write id, sections, from,
#    tail, lineage} | {0, incarnation counter} absent | {-1, counter, what[, n, len]} damaged
# Unchanged since the cached head (its write id is the head's, same generation and count):
# sections '' (the caller has them; stored sections are never empty) and no tail, so a warm
# load of an unchanged slot is a version check that sends back no state.
# The tail is the messages from `from` joined by "\n" (encoded messages are single-line JSON):
# one bulk reply for a short tail. A cold load asks for the head only and reads the list with
# a plain LRANGE (10x cheaper than copying thousands of messages through Lua), then checks it
# against the head's hash chain. The sections are decoded by the caller, not here.
LOAD = (
    NUMBERS
    + LINEAGE
    + """
local h = redis.call('HMGET', KEYS[1], 'v', 'g', 'n', 'c', 'i', 'w', 'd', 'r')
local ictr = ctr(redis.call('HGET', KEYS[4], 'i:' .. ARGV[4]))
if not ictr then return {-1, 0, 'meta'} end
if not h[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  if redis.call('EXISTS', KEYS[2]) == 1 then return {-1, ictr, 'orphan'} end
  return {0, ictr}
end
local v, g, n, inc = int(h[1]), int(h[2]), int(h[3]), int(h[5])
if not (v and v > 0 and g and n and inc and h[4] and h[6]) then return {-1, ictr, 'head'} end
if not h[7] or h[7] == '' then return {-1, ictr, 'sections'} end
if h[8] and (#h[8] % 8 ~= 0 or #h[8] > RING * 8) then return {-1, ictr, 'head'} end
local len = redis.call('LLEN', KEYS[2])
if len ~= n then return {-1, ictr, 'count', n, len} end
local from = 0
if ARGV[1] == 'head' then
  from = n
elseif tonumber(ARGV[1]) == g and n >= tonumber(ARGV[2]) then
  from = tonumber(ARGV[2])
end
local tail, sections = '', h[7]
if n > from then
  tail = table.concat(redis.call('LRANGE', KEYS[2], from, n - 1), '\\n')
elseif from == n and ARGV[8] ~= '' and ARGV[8] == h[6] then
  sections = ''  -- the cached head is this one: nothing to send back
end
local seen = lineage(inc, v, h[6], ring_of(h[8], h[6]), ARGV[5], ARGV[6], ARGV[7])
local out = {v, ictr, g, n, h[4], inc, h[6], sections, from, tail, seen}
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return out
"""
)

# KEYS: keyset[, user index -- only when not in a cluster] ; ARGV: 1 session base name,
# 2 key name ('' = every key of the session), 3 encoded session id (the index member).
# -> {deleted key count, session still exists, key names looked at...}
# The per-key names are built from the base: same hash tag, so the same slot as KEYS[1].
DELETE = """
local names
if ARGV[2] ~= '' then names = {ARGV[2]} else names = redis.call('SMEMBERS', KEYS[1]) end
local existed = 0
for _, k in ipairs(names) do
  existed = existed + redis.call('DEL', ARGV[1] .. ':h:' .. k, ARGV[1] .. ':m:' .. k)
  redis.call('SREM', KEYS[1], k)
end
local remaining = redis.call('EXISTS', KEYS[1])
if remaining == 0 and KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[3]) end
local out = {existed, remaining}
for _, k in ipairs(names) do out[#out + 1] = k end
return out
"""

# KEYS: lease, meta, queue, queue deadlines ; ARGV: owner, lease ms, waiter window ms (0 = no
# queueing). -> {1, epoch} granted, {0, lease pttl}, {-1, 'meta'} (damaged counters: an
# epoch read as 0 could be handed out twice) or {-2, max(ge, fe)} (the next epoch would reach
# 2^53, which no fence may carry: refused before any write). A damaged waiter deadline counts
# as expired.
ACQUIRE = (
    NUMBERS
    + """
local lease, meta, queue, qdl = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, ttl, window = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local m = redis.call('HMGET', meta, 'ge', 'fe', 'qt')
local ge, fe = ctr(m[1]), ctr(m[2])
if not (ge and fe and ctr(m[3])) then return {-1, 'meta'} end
if math.max(ge, fe) >= 9007199254740991 then return {-2, math.max(ge, fe)} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local waiting = redis.call('ZRANGE', queue, 0, -1)
for _, w in ipairs(waiting) do
  local d = tonumber(redis.call('HGET', qdl, w)) or 0
  if d < now then
    redis.call('ZREM', queue, w)
    redis.call('HDEL', qdl, w)
  end
end
if redis.call('EXISTS', lease) == 0 then
  local first = redis.call('ZRANGE', queue, 0, 0)[1]
  if (not first) or first == owner then
    local e = math.max(ge, fe) + 1
    redis.call('HSET', meta, 'ge', e, 'go', owner)
    redis.call('HSET', lease, 'owner', owner, 'epoch', e)
    redis.call('PEXPIRE', lease, ttl)
    redis.call('ZREM', queue, owner)
    redis.call('HDEL', qdl, owner)
    return {1, e}
  end
end
if window > 0 then
  if not redis.call('ZSCORE', queue, owner) then
    redis.call('ZADD', queue, redis.call('HINCRBY', meta, 'qt', 1), owner)
  end
  redis.call('HSET', qdl, owner, now + window)
  if redis.call('PTTL', queue) < window then
    redis.call('PEXPIRE', queue, window)
    redis.call('PEXPIRE', qdl, window)
  end
end
return {0, redis.call('PTTL', lease)}
"""
)

# KEYS: lease, queue, queue deadlines ; ARGV: owner -- a waiter that gives up leaves the queue
LEAVE = """
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
"""

# KEYS: lease ; ARGV: owner, epoch, lease ms -> 1 renewed, 0 the lease is not ours any more
RENEW = """
local m = redis.call('HMGET', KEYS[1], 'owner', 'epoch')
if m[1] == ARGV[1] and m[2] == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0
"""

# KEYS: lease ; ARGV: owner, epoch -> 1 released, 0 not ours (expired or taken over)
RELEASE = """
local m = redis.call('HMGET', KEYS[1], 'owner', 'epoch')
if m[1] == ARGV[1] and m[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


class Script:
    """A Lua script run by its SHA1; NOSCRIPT (restart, failover, SCRIPT FLUSH) -> EVAL once."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    async def run(self, client: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await client.eval(self.source, len(keys), *keys, *args)


async def run_then_wait(
    script: Script, client: Any, keys: list[str], args: list[Any], replicas: int, ms: int
) -> tuple[Any, int]:
    """The script, then ``WAIT replicas ms`` on the same connection, in one round trip.

    WAIT counts the replicas that hold every write sent on its own connection, so it must
    ride the script's: a pipeline (not a transaction) sends both on one connection. Returns
    (the script's answer, how many replicas acknowledged).
    """
    for command in ("EVALSHA", "EVAL"):
        async with client.pipeline(transaction=False) as pipe:
            body = script.sha if command == "EVALSHA" else script.source
            pipe.execute_command(command, body, len(keys), *keys, *args)
            pipe.execute_command("WAIT", replicas, ms)
            try:
                answer, acked = await pipe.execute()
            except NoScriptError:
                continue
            return answer, int(acked)
    raise NoScriptError("the save script could not be loaded")
