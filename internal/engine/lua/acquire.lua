-- Acquire locks, any number in one call. Lock i has the lock key
-- KEYS[4i-3], its shard's state hash KEYS[4i-2], its pause key KEYS[4i-1]
-- and its waiters' turn KEYS[4i]; its name, value, TTL (ms), occurrence
-- (unix ms, "0" for none), fence floor, state TTL (ms), waiter and turn
-- TTL (ms) are ARGV[8i-6..8i+1]. A lock is set (SET NX PX) unless the
-- occurrence is at or below the lock's mark, or the lock is paused (its
-- pause key exists) and an occurrence is claimed, or (without an
-- occurrence) a waiter's turn is set and the attempt's waiter does not
-- come before it. A fence floor other than "0" commits the fence with the
-- vote, for a lock on one node: once set, its fence counter is raised to
-- the larger of the counter + 1 and the floor (the state then kept for
-- the state TTL, or a minute less: see keep), and the answer carries the
-- raised counter. The locks' states are read together (one HMGET per
-- shard), the pause keys only when a lock claims an occurrence, the turn
-- only when it does not. A lock held as a part of a parent lock (see
-- claim) is held by the part's value; the lock key is then deleted where
-- it holds this attempt's value, which the attempt's plain commands may
-- have set (see engine's plainAcquire), as it is when a turn refuses it.
--
-- Waiters (mutex's Lock) are served in turn: a waiter is "id|start" (the
-- time it began to wait, unix ms), "" for an attempt that does not wait.
-- A waiter refused by a holder takes the turn (a key with the turn TTL,
-- which it renews at every attempt), unless one that came before it (see
-- precedes) holds it; an attempt of anyone else is refused while the turn
-- is set; the waiter that acquires the lock deletes the turn, and tells
-- the other waiters (notify), so that the next one takes it.
--
-- ARGV[1] == "1" asks for the server's uptime (seconds) and run id, for the
-- restart check.
-- Returns {uptime, run_id, status_1, fence_1, detail_1, left_1, status_2, ...}:
--   status 1: acquired (or already ours), detail ""
--   status 0: held by another value, detail = that value ("turn " and
--             the waiter when only the turn refuses it)
--   status 2: occurrence already run, detail = the mark
--   status 3: paused, detail = the pause key's value
--   status -1: the lock's keys could not be read (e.g. WRONGTYPE), or
--              its state holds a field that is not a number,
--              detail = the error
-- fence is the lock's fence counter (a decimal string, "0" when unset);
-- left, for status 0, how long what holds the lock has left on this node
-- (ms: the lock key's PTTL, its part's parent key's, or the turn's; 0 when
-- unknown), 0 otherwise.
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

local n = #KEYS / 4
local claims = false
for i = 1, n do
  claims = claims or tonumber(ARGV[8 * i - 3]) > 0
end
local paused = claims and pausesOf(keysAt(n, 4, 3)) or {}
local fence, mark, bad, running, runs, parents = {}, {}, {}, {}, {}, {}
local order, of = groups(n, 4, 2)
for _, state in ipairs(order) do
  local fields = {}
  for _, i in ipairs(of[state]) do
    local name = ARGV[8 * i - 6]
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
      runs[i] = st[3 * j]
      running[i] = st[3 * j] and runningHere(st[3 * j], parents)
      bad[i] = badState(state, ARGV[8 * i - 6], fence[i], mark[i])
    end
  end
end

-- acquired answers lock i set (or already ours), raising its fence
-- counter first when asked, and giving up the waiters' turn (turn) it
-- held or came before.
local function acquired(i, f, turn)
  local a = 8 * i - 6
  local floor = tonumber(ARGV[a + 4])
  if floor > 0 then
    local state = KEYS[4 * i - 2]
    local raised = math.max(tonumber(f) + 1, floor)
    f = string.format("%d", raised)
    redis.call("HSET", state, "f|" .. ARGV[a], f)
    keep(state, ARGV[a + 5], 60000)
  end
  if turn then -- the next waiter takes it
    redis.call("DEL", KEYS[4 * i])
    notify(KEYS[4 * i - 3], "turn")
  end
  answer(1, f, "", 0)
end

for i = 1, n do
  local a = 8 * i - 6
  local lock, value, ttl, occ, waiter = KEYS[4 * i - 3], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 6]
  local f, m = fence[i] or "0", mark[i]
  local turn = not bad[i] and occ == 0 and redis.pcall("GET", KEYS[4 * i])
  turn = type(turn) == "string" and turn
  if bad[i] then
    answer(-1, "0", bad[i], 0)
  elseif occ > 0 and m and tonumber(m) >= occ then
    answer(2, f, m, 0)
  elseif occ > 0 and paused[i] then
    answer(3, f, paused[i], 0)
  elseif running[i] or turn and turn ~= waiter and (waiter == "" or not precedes(waiter, turn)) then
    local cur = redis.pcall("GET", lock)
    if cur == value then
      redis.call("DEL", lock) -- set by this attempt's plain commands (see engine's plainAcquire)
      cur = false
    end
    -- held as a part of a parent lock (see claim), or by a waiter's turn
    local heldBy = running[i] and string.match(runs[i], "^([^\n]*)\n") or type(cur) == "string" and lock or KEYS[4 * i]
    answer(0, f, running[i] or type(cur) == "string" and cur or "turn " .. turn, leftOn(heldBy))
  else
    local set = redis.pcall("SET", lock, value, "NX", "PX", ttl)
    local cur = not failed(set) and not (type(set) == "table" and set.ok) and redis.pcall("GET", lock)
    if type(set) == "table" and set.ok then
      acquired(i, f, turn)
    elseif cur == value then -- ours already: this attempt's call sent again
      redis.call("PEXPIRE", lock, ttl)
      acquired(i, f, turn)
    elseif type(cur) == "string" then
      if waiter ~= "" then -- the turn is ours: none comes before us
        redis.call("SET", KEYS[4 * i], waiter, "PX", ARGV[a + 7])
      end
      answer(0, f, cur, leftOn(lock)) -- held, maybe by an earlier lock of this call: the same lock asked for twice
    else
      answer(-1, "0", failed(set) and set.err or wrongType(lock) or ("ERR " .. lock .. " could not be set"), 0)
    end
  end
end
return out
