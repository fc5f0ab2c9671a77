-- Second phase of acquisitions, any number in one call. Lock i has the
-- lock key KEYS[4i-3], the state hash KEYS[4i-2], the ledger KEYS[4i-1]
-- and the trigger KEYS[4i], and the arguments ARGV[8i-6..8i+1]: value,
-- fence, occurrence, record, score, cap, window and ticket. While the lock
-- still holds value, and the acquisition has its ticket (unless ""), raise
-- the state's fence counter to fence and its occurrence mark to occurrence
-- (each "0" to leave it; neither is ever lowered), when either is raised
-- give the state a TTL of ARGV[1] ms, and add "s|" .. record (unless "")
-- to the ledger (see record in the prelude).
-- A ticket is a trigger's request: the acquisition has it when the trigger
-- key holds it, and takes it (deletes the key and notes ticket|value in
-- the state, so that a commit sent again still has it); a ticket taken by
-- another acquisition, or gone, fails the commit here (result 0).
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- (and the ticket was had), 0 if not, -1 if the keys could not be read or
-- the state holds a field that is not a number (detail = the error).
for i = 1, #KEYS / 4 do
  local lock, state, ledger, trigger = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]
  local a = 8 * i - 6
  local value, f, o, ticket = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 7]
  local cur = redis.pcall("GET", lock)
  local st = cur == value and redis.pcall("HMGET", state, "fence", "mark", "ticket")
  local req = cur == value and ticket ~= "" and redis.pcall("GET", trigger)
  if failed(cur) then
    answer(-1, cur.err)
  elseif cur ~= value then
    answer(0, "")
  elseif failed(st) then
    answer(-1, st.err)
  elseif badState(state, st) then
    answer(-1, badState(state, st))
  elseif failed(req) then
    answer(-1, req.err)
  elseif ticket ~= "" and req ~= ticket and st[3] ~= ticket .. "|" .. value then
    answer(0, "ticket")
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
    if req == ticket then
      redis.call("DEL", trigger)
      table.insert(raise, "ticket")
      table.insert(raise, ticket .. "|" .. value)
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
