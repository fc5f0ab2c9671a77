-- Acquire locks, any number in one call. Lock i has the lock key KEYS[3i-2],
-- the state hash KEYS[3i-1] and the pause key KEYS[3i]; its value, TTL (ms)
-- and occurrence (unix ms, "0" for none) are ARGV[3i-1], ARGV[3i] and
-- ARGV[3i+1]. A lock is set (SET NX PX) unless the occurrence is at or
-- below the state's mark, or the lock is paused (its pause key exists) and
-- an occurrence is claimed.
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
-- fails closed. One lock's
-- error does not stop the others.
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

for i = 1, #KEYS / 3 do
  local lock, state, paused = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local value, ttl, occ = ARGV[3 * i - 1], ARGV[3 * i], tonumber(ARGV[3 * i + 1])
  local st = redis.pcall("HMGET", state, "fence", "mark")
  local cur = redis.pcall("GET", lock)
  local bad = not failed(st) and badState(state, st)
  if failed(st) then
    answer(-1, "0", st.err)
  elseif failed(cur) then
    answer(-1, "0", cur.err)
  elseif bad then
    answer(-1, "0", bad)
  else
    local fence, mark = st[1] or "0", st[2]
    if cur == value then
      redis.call("PEXPIRE", lock, ttl)
      answer(1, fence, "")
    elseif occ > 0 and mark and tonumber(mark) >= occ then
      answer(2, fence, mark)
    elseif occ > 0 and redis.call("EXISTS", paused) == 1 then
      local by = redis.pcall("GET", paused)
      answer(3, fence, type(by) == "string" and by or "?")
    elseif cur then
      answer(0, fence, cur)
    else
      redis.call("SET", lock, value, "PX", ttl)
      answer(1, fence, "")
    end
  end
end
return out
