-- Compare-and-delete, any number of locks in one call. Lock i has the lock
-- key KEYS[3i-2], the state hash KEYS[3i-1] and the ledger KEYS[3i], and
-- the arguments ARGV[7i-5..7i+1]: value, occurrence, old, record, score,
-- cap and window. While the lock holds value, raise the state's occurrence
-- mark to occurrence ("0" to leave it; when raised, the state gets a TTL
-- of ARGV[1] ms) and delete the lock. Either way, replace "s|" .. old in
-- the ledger by record, prefixed "r|" when the lock held value and "l|"
-- when it did not (see record in the prelude; "" for none): the ledger
-- says what the holder did even when its lease was lost.
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- and was deleted, 0 if not, -1 if the lock or its state could not be read
-- (detail = the server's error; the lock is then left as it is). One
-- lock's error does not stop the others.
for i = 1, #KEYS / 3 do
  local lock, state, ledger = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local a = 7 * i - 5
  local value, o = ARGV[a], tonumber(ARGV[a + 1])
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
      redis.call("HSET", state, "mark", ARGV[a + 1])
      redis.call("PEXPIRE", state, ARGV[1])
    end
    redis.call("DEL", lock)
    answer(1, "")
  end
  local old, new = ARGV[a + 2], ARGV[a + 3]
  if new ~= "" then
    new = (out[#out - 1] == 1 and "r|" or "l|") .. new
  end
  if old ~= "" then
    old = "s|" .. old
  end
  record(ledger, old, new, tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]))
end
return out
