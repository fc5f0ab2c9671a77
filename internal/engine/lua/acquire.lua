-- Acquire locks, any number in one call. Lock i has the lock key
-- KEYS[3i-2], its shard's state hash KEYS[3i-1] and its pause key
-- KEYS[3i]; its name, value, TTL (ms), occurrence (unix ms, "0" for
-- none), fence floor and state TTL (ms) are ARGV[6i-4..6i+1]. A lock is
-- set (SET NX PX) unless the occurrence is at or below the lock's mark,
-- or the lock is paused (its pause key exists) and an occurrence is
-- claimed. A fence floor other than "0" commits the fence with the vote,
-- for a lock on one node: once set, its fence counter is raised to the
-- larger of the counter + 1 and the floor (the state then kept for the
-- state TTL, or a minute less: see keep), and the answer carries the
-- raised counter. The locks' states
-- are read together (one HMGET per shard), the pause keys only when a lock
-- claims an occurrence: a lock costs the server a HMGET and a SET, and a
-- GET when the SET finds it held. A lock held as a part of a parent lock
-- (see claim) is held by the part's value; the lock key is then deleted
-- where it holds this attempt's value, which the attempt's plain commands
-- may have set (see engine's plainAcquire).
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
local claims = false
for i = 1, n do
  claims = claims or tonumber(ARGV[6 * i - 1]) > 0
end
local paused = claims and pausesOf(keysAt(n, 3, 3)) or {}
local fence, mark, bad, running, parents = {}, {}, {}, {}, {}
local order, of = groups(n, 3, 2)
for _, state in ipairs(order) do
  local fields = {}
  for _, i in ipairs(of[state]) do
    local name = ARGV[6 * i - 4]
    fields[#fields + 1] = "f|" .. name
    fields[#fields + 1] = "m|" .. name
    fields[#fields + 1] = "r|" .. name
  end
  local st = redis.pcall("HMGET", state, unpack(fields))
  for j, i in ipairs(of[state]) do
    if failed(st) then
      bad[i] = st.err
    else
      fence[i], mark[i] = st[3 * j - 2], st[3 * j - 1]
      running[i] = st[3 * j] and runningHere(st[3 * j], parents)
      bad[i] = badState(state, ARGV[6 * i - 4], fence[i], mark[i])
    end
  end
end

-- acquired answers lock i set (or already ours), raising its fence
-- counter first when asked.
local function acquired(i, f)
  local floor = tonumber(ARGV[6 * i])
  if floor > 0 then
    local state = KEYS[3 * i - 1]
    local raised = math.max(tonumber(f) + 1, floor)
    f = string.format("%d", raised)
    redis.call("HSET", state, "f|" .. ARGV[6 * i - 4], f)
    keep(state, ARGV[6 * i + 1], 60000)
  end
  answer(1, f, "")
end

for i = 1, n do
  local lock, value, ttl, occ = KEYS[3 * i - 2], ARGV[6 * i - 3], ARGV[6 * i - 2], tonumber(ARGV[6 * i - 1])
  local f, m = fence[i] or "0", mark[i]
  if bad[i] then
    answer(-1, "0", bad[i])
  elseif occ > 0 and m and tonumber(m) >= occ then
    answer(2, f, m)
  elseif occ > 0 and paused[i] then
    answer(3, f, paused[i])
  elseif running[i] then
    if redis.pcall("GET", lock) == value then
      redis.call("DEL", lock) -- set by this attempt's plain commands (see engine's plainAcquire)
    end
    answer(0, f, running[i]) -- held as a part of a parent lock (see claim)
  else
    local set = redis.pcall("SET", lock, value, "NX", "PX", ttl)
    local cur = not failed(set) and not (type(set) == "table" and set.ok) and redis.pcall("GET", lock)
    if type(set) == "table" and set.ok then
      acquired(i, f)
    elseif cur == value then -- ours already: this attempt's call sent again
      redis.call("PEXPIRE", lock, ttl)
      acquired(i, f)
    elseif type(cur) == "string" then
      answer(0, f, cur) -- held, maybe by an earlier lock of this call: the same lock asked for twice
    else
      answer(-1, "0", failed(set) and set.err or wrongType(lock) or ("ERR " .. lock .. " could not be set"))
    end
  end
end
return out
