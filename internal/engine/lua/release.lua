-- Compare-and-delete, any number of locks in one call. Lock i has the lock
-- key KEYS[2i-1] and the state hash KEYS[2i]: while the lock holds value
-- ARGV[2i], raise the state's occurrence mark to ARGV[2i+1] ("0" to leave
-- it; when raised, the state gets a TTL of ARGV[1] ms) and delete the
-- lock.
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- and was deleted, 0 if not, -1 if the lock or its state could not be read
-- (detail = the server's error; the lock is then left as it is). One
-- lock's error does not stop the others.
for i = 1, #KEYS / 2 do
  local lock, state = KEYS[2 * i - 1], KEYS[2 * i]
  local value, o = ARGV[2 * i], tonumber(ARGV[2 * i + 1])
  local cur = redis.pcall("GET", lock)
  local mark = cur == value and o > 0 and redis.pcall("HGET", state, "mark")
  local bad = mark and not failed(mark) and badState(state, {"0", mark})
  if failed(cur) then
    answer(-1, cur.err)
  elseif cur ~= value then
    answer(0, "")
  elseif failed(mark) then
    answer(-1, mark.err) -- the lock is left to its TTL
  elseif bad then
    answer(-1, bad) -- the lock is left to its TTL
  else
    if o > 0 and tonumber(mark or "0") < o then
      redis.call("HSET", state, "mark", ARGV[2 * i + 1])
      redis.call("PEXPIRE", state, ARGV[1])
    end
    redis.call("DEL", lock)
    answer(1, "")
  end
end
return out
