-- Second phase of acquisitions, any number in one call. Lock i has the
-- lock key KEYS[3i-2], the state hash KEYS[3i-1] and the ledger KEYS[3i],
-- and the arguments ARGV[7i-5..7i+1]: value, fence, occurrence, record,
-- score, cap and window. While the lock still holds value, raise the
-- state's fence counter to fence and its occurrence mark to occurrence
-- (each "0" to leave it; neither is ever lowered), when either is raised
-- give the state a TTL of ARGV[1] ms, and add "s|" .. record (unless "")
-- to the ledger (see record in the prelude).
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held,
-- 0 if not, -1 if the keys could not be read or the state holds a field
-- that is not a number (detail = the error).
for i = 1, #KEYS / 3 do
  local lock, state, ledger = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local a = 7 * i - 5
  local value, f, o = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
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
      table.insert(raise, ARGV[a + 1])
    end
    if o > 0 and tonumber(st[2] or "0") < o then
      table.insert(raise, "mark")
      table.insert(raise, ARGV[a + 2])
    end
    if #raise > 0 then
      redis.call("HSET", state, unpack(raise))
      redis.call("PEXPIRE", state, ARGV[1])
    end
    if ARGV[a + 3] ~= "" then
      record(ledger, "", "s|" .. ARGV[a + 3], tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]))
    end
    answer(1, "")
  end
end
return out
