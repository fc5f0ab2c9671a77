-- Acquire locks, any number in one call. Lock i has the lock key
-- KEYS[3i-2], its shard's state hash KEYS[3i-1] and its pause key
-- KEYS[3i]; its name, value, TTL (ms) and occurrence (unix ms, "0" for
-- none) are ARGV[4i-2..4i+1]. A lock is set (SET NX PX) unless the
-- occurrence is at or below the lock's mark, or the lock is paused (its
-- pause key exists) and an occurrence is claimed. The locks' keys are read
-- together (one MGET, one HMGET per shard): a call of many locks costs the
-- server a few commands, and one SET per lock it sets. A lock held as a
-- part of a parent lock (see claim) is held by the part's value.
-- ARGV[1] == "1" asks for the server's uptime (seconds) and run id, for the
-- restart check.
-- Returns {uptime, run_id, status_1, fence_1, detail_1, status_2, ...}:
--   status 1: acquired (or already ours), detail ""
--   status 0: held by another value, detail = that value
--   status 2: occurrence already run, detail = the mark
--   status 3: paused, detail = the pause key's value
--   status -1: the lock's keys could not be read (e.g. WRONGTYPE), or
--              its state holds a field that is not a number,
--              detail = the error
-- fence is the lock's fence counter (a decimal string, "0" when unset).
-- uptime and run_id are INFO's text as it stands ("?" when absent or when
-- INFO failed), both "" when not asked for: the client parses them and
-- fails closed. One lock's error does not stop the others.
local uptime, runid = "", ""
if ARGV[1] == "1" then
  local info = redis.pcall("INFO", "server")
  if type(info) == "string" then
    uptime = string.match(info, "uptime_in_seconds:([^\r\n]*)") or "?"
    runid = string.match(info, "run_id:([^\r\n]*)") or "?"
  else
    uptime, runid = "?", "?" -- INFO failed: unreadable, not "not asked"
  end
end
answer(uptime, runid)

local n = #KEYS / 3
local cur = redis.call("MGET", unpack(keysAt(n, 3, 1)))
local pauses = keysAt(n, 3, 3)
local paused = pausesOf(pauses)
local fence, mark, bad, running, parents = {}, {}, {}, {}, {}
local order, of = groups(n, 3, 2)
for _, state in ipairs(order) do
  local fields = {}
  for _, i in ipairs(of[state]) do
    fields[#fields + 1] = "f|" .. ARGV[4 * i - 2]
    fields[#fields + 1] = "m|" .. ARGV[4 * i - 2]
    fields[#fields + 1] = "r|" .. ARGV[4 * i - 2]
  end
  local st = redis.pcall("HMGET", state, unpack(fields))
  for j, i in ipairs(of[state]) do
    if failed(st) then
      bad[i] = st.err
    else
      fence[i], mark[i] = st[3 * j - 2], st[3 * j - 1]
      running[i] = st[3 * j] and runningHere(st[3 * j], parents)
      bad[i] = badState(state, ARGV[4 * i - 2], fence[i], mark[i])
    end
  end
end

for i = 1, n do
  local lock, value, ttl, occ = KEYS[3 * i - 2], ARGV[4 * i - 1], ARGV[4 * i], tonumber(ARGV[4 * i + 1])
  local f, m = fence[i] or "0", mark[i]
  if bad[i] then
    answer(-1, "0", bad[i])
  elseif cur[i] == value then
    redis.call("PEXPIRE", lock, ttl)
    answer(1, f, "")
  elseif occ > 0 and m and tonumber(m) >= occ then
    answer(2, f, m)
  elseif occ > 0 and paused[i] then
    answer(3, f, paused[i])
  elseif running[i] then
    answer(0, f, running[i]) -- held as a part of a parent lock (see claim)
  elseif cur[i] then
    answer(0, f, cur[i])
  else
    local set = redis.pcall("SET", lock, value, "NX", "PX", ttl)
    local now = not failed(set) and not (type(set) == "table" and set.ok) and redis.pcall("GET", lock)
    if type(set) == "table" and set.ok then
      answer(1, f, "")
    elseif type(now) == "string" then
      answer(0, f, now) -- set by an earlier lock of this call: the same lock asked for twice
    else
      answer(-1, "0", failed(set) and set.err or wrongType(lock) or ("ERR " .. lock .. " could not be set"))
    end
  end
end
return out
