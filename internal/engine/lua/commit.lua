-- Second phase of acquisitions, any number in one call. Lock i has the
-- lock key KEYS[2i-1] and the state hash KEYS[2i]; while the lock still
-- holds value ARGV[3i-1], raise the state's fence counter to ARGV[3i] and
-- its occurrence mark to ARGV[3i+1] (each "0" to leave it; neither is ever
-- lowered), and when either is raised give the state a TTL of ARGV[1] ms.
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held,
-- 0 if not, -1 if the keys could not be read or the state holds a field
-- that is not a number (detail = the error).
for i = 1, #KEYS / 2 do
  local lock, state = KEYS[2 * i - 1], KEYS[2 * i]
  local value, f, o = ARGV[3 * i - 1], tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local cur = redis.pcall("GET", lock)
  local st = cur == value and redis.pcall("HMGET", state, "fence", "mark")
  if failed(cur) then
    answer(-1, cur.err)
  elseif cur ~= value then
    answer(0, "")
  elseif failed(st) then
    answer(-1, st.err)
  elseif badState(state, st) then
    answer(-1, badState(state, st))
  else
    local raise = {}
    if f > 0 and tonumber(st[1] or "0") < f then
      table.insert(raise, "fence")
      table.insert(raise, ARGV[3 * i])
    end
    if o > 0 and tonumber(st[2] or "0") < o then
      table.insert(raise, "mark")
      table.insert(raise, ARGV[3 * i + 1])
    end
    if #raise > 0 then
      redis.call("HSET", state, unpack(raise))
      redis.call("PEXPIRE", state, ARGV[1])
    end
    answer(1, "")
  end
end
return out
