-- Acquire locks, any number in one call. Lock i has the lock key KEYS[2i-1]
-- and the state hash KEYS[2i]; its value, TTL (ms) and occurrence (unix ms,
-- "0" for none) are ARGV[3i-1], ARGV[3i] and ARGV[3i+1]. A lock is set
-- (SET NX PX) unless the occurrence is at or below the state's mark.
-- ARGV[1] == "1" asks for the server's uptime (seconds), for the restart
-- check.
-- Returns {uptime, status_1, fence_1, detail_1, status_2, ...}:
--   status 1: acquired (or already ours), detail ""
--   status 0: held by another value, detail = that value
--   status 2: occurrence already run, detail = the mark
--   status -1: the lock's keys could not be read (e.g. WRONGTYPE),
--              detail = the server's error
-- fence is the lock's fence counter (a decimal string, "0" when unset);
-- uptime is -1 when not asked for. One lock's error does not stop the
-- others.
local uptime = -1
if ARGV[1] == "1" then
  local info = redis.call("INFO", "server")
  uptime = tonumber(string.match(info, "uptime_in_seconds:(%d+)")) or -1
end
answer(uptime)

for i = 1, #KEYS / 2 do
  local lock, state = KEYS[2 * i - 1], KEYS[2 * i]
  local value, ttl, occ = ARGV[3 * i - 1], ARGV[3 * i], tonumber(ARGV[3 * i + 1])
  local st = redis.pcall("HMGET", state, "fence", "mark")
  local cur = redis.pcall("GET", lock)
  if failed(st) then
    answer(-1, "0", st.err)
  elseif failed(cur) then
    answer(-1, "0", cur.err)
  else
    local fence, mark = st[1] or "0", st[2]
    if cur == value then
      redis.call("PEXPIRE", lock, ttl)
      answer(1, fence, "")
    elseif occ > 0 and mark and tonumber(mark) >= occ then
      answer(2, fence, mark)
    elseif cur then
      answer(0, fence, cur)
    else
      redis.call("SET", lock, value, "PX", ttl)
      answer(1, fence, "")
    end
  end
end
return out
