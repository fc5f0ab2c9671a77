-- Compare-and-delete, any number of locks in one call. Lock i has the lock
-- key KEYS[3i-2] and its shard's state hash KEYS[3i-1] and ledger
-- KEYS[3i], and the arguments ARGV[8i-6..8i+1]: name, value, occurrence,
-- old, record, score, cap and window. While the lock holds value, raise
-- its occurrence mark to occurrence ("0" to leave it; when raised, the
-- state gets a TTL of ARGV[1] ms) and delete the lock. Either way, replace
-- "s|" .. old in the ledger by record, prefixed "r|" when the lock held
-- value and "l|" when it did not (see record in the prelude; "" for
-- none): the ledger says what the holder did even when its lease was
-- lost. The locks of one shard are read and written together. A lock
-- deleted that claims no occurrence is published on its channel (its
-- key's name) when a waiter is subscribed to it (see notify).
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- and was deleted, 0 if not, -1 if the lock or its state could not be read
-- (detail = the server's error; the lock is then left as it is). One
-- lock's error does not stop the others.
local n = #KEYS / 3
local cur = redis.call("MGET", unpack(keysAt(n, 3, 1)))
local wrong = wrongTypes(n, 3, 1, cur)
local marks = {}
local order, of = groups(n, 3, 2)
for _, state in ipairs(order) do
  local fields, want = {}, {}
  for _, i in ipairs(of[state]) do
    if cur[i] == ARGV[8 * i - 5] and tonumber(ARGV[8 * i - 4]) > 0 then
      fields[#fields + 1] = "m|" .. ARGV[8 * i - 6]
      want[#want + 1] = i
    end
  end
  if #want > 0 then
    local r = redis.pcall("HMGET", state, unpack(fields))
    for j, i in ipairs(want) do
      marks[i] = failed(r) and r or (r[j] or "0")
    end
  end
end

local dels, notifies, raise, olds, news, trim, score = {}, {}, {}, {}, {}, {}, {}
for i = 1, n do
  local lock, state = KEYS[3 * i - 2], KEYS[3 * i - 1]
  local a = 8 * i - 6
  local name, value, o = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local mark = marks[i]
  local bad = mark and not failed(mark) and badState(state, name, "0", mark)
  if cur[i] ~= value then
    answer(wrong[i] and -1 or 0, wrong[i] or "")
  elseif failed(mark) then
    answer(-1, mark.err) -- the lock is left to its TTL
  elseif bad then
    answer(-1, bad) -- the lock is left to its TTL
  else
    if o > 0 and tonumber(mark) < o then
      local r = raise[state] or {}
      raise[state] = r
      r[#r + 1] = "m|" .. name
      r[#r + 1] = ARGV[a + 2]
    end
    dels[#dels + 1] = lock
    if o == 0 then -- a lock claiming an occurrence has no waiters
      notifies[#notifies + 1] = lock
    end
    answer(1, "")
  end
  ending(olds, news, score, trim, state, ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], out[#out - 1] == 1)
end

if #dels > 0 then
  redis.call("DEL", unpack(dels))
end
for _, lock in ipairs(notifies) do
  notify(lock, "released")
end
for _, state in ipairs(order) do
  local r = raise[state]
  if r then
    redis.call("HSET", state, unpack(r))
    keep(state, ARGV[1])
  end
  if olds[state] or news[state] then
    local cap, window = ledgerOf(of[state], function(i) return ARGV[8 * i - 3] ~= "" or ARGV[8 * i - 2] ~= "" end,
      function(i) return tonumber(ARGV[8 * i]), tonumber(ARGV[8 * i + 1]) end)
    record(KEYS[3 * of[state][1]], state, olds[state] or {}, news[state] or {}, trim[state], score[state] or 0, cap, window)
  end
end
return out
