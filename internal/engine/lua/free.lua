-- End parts (see claim), any number in one call. Part i has its shard's
-- ledger KEYS[2i-1] and state hash KEYS[2i], and the arguments
-- ARGV[8i-6..8i+1]: name, running value (as claim set it), old, record,
-- score, cap, window and occurrence. While the part's running value is the
-- one given, it is removed; the part was still running if its parent still
-- held. An occurrence other than "0" ends a claim given up (not won): where
-- its running value was still there and the mark is still its occurrence,
-- the mark goes back below it, so that the tick can be claimed again (the
-- claim never ran). Either way, record is added to the ledger, prefixed
-- "r|" when the part was still running and "l|" when not ("" for none),
-- and "s|" .. old removed; old is "" when the part's started record is
-- listed in its claim's member (see claim.lua), which stays. A claim
-- given up whose started record is listed so sends "x|" .. that record as
-- old: where its running value was still there, it is added to the
-- ledger as it is, at the occurrence, which voids the record in the
-- claim's member (the claim never ran). ARGV[1] is unused (a leading argument, so that calls
-- merge). Returns {result_1, detail_1, ...}: 1 if the part was running
-- (its value there, its parent holding), 0 if not, -1 if its state could
-- not be read (detail = the error).
local n = #KEYS / 2
local order, of = groups(n, 2, 2)

local parents = {}
local dels, olds, news, trim, score, unmark, voided = {}, {}, {}, {}, {}, {}, {}
for _, state in ipairs(order) do
  local fields = {}
  for _, i in ipairs(of[state]) do
    fields[#fields + 1] = "r|" .. ARGV[8 * i - 6]
    fields[#fields + 1] = "m|" .. ARGV[8 * i - 6]
  end
  local r = redis.pcall("HMGET", state, unpack(fields))
  for j, i in ipairs(of[state]) do
    local a = 8 * i - 6
    if failed(r) then
      answer(-1, r.err)
    elseif r[2 * j - 1] == ARGV[a + 1] then
      dels[state] = dels[state] or {}
      table.insert(dels[state], "r|" .. ARGV[a])
      if ARGV[a + 7] ~= "0" and r[2 * j] == ARGV[a + 7] then
        unmark[state] = unmark[state] or {}
        table.insert(unmark[state], "m|" .. ARGV[a])
        table.insert(unmark[state], string.format("%d", tonumber(ARGV[a + 7]) - 1))
      end
      if ARGV[a + 7] ~= "0" and string.sub(ARGV[a + 2], 1, 2) == "x|" then
        voided[i] = true
      end
      answer(runningHere(r[2 * j - 1], parents) and 1 or 0, "")
    else
      answer(0, "")
    end
  end
end
-- The answers above are by shard; put them back in the parts' order.
local byPart, k = {}, 0
for _, state in ipairs(order) do
  for _, i in ipairs(of[state]) do
    byPart[i] = {out[2 * k + 1], out[2 * k + 2]}
    k = k + 1
  end
end
out = {}
for i = 1, n do
  answer(byPart[i][1], byPart[i][2])
  local state, a = KEYS[2 * i], 8 * i - 6
  local old = ARGV[a + 2]
  if string.sub(old, 1, 2) == "x|" then
    if voided[i] then
      news[state] = news[state] or {}
      table.insert(news[state], ARGV[a + 7])
      table.insert(news[state], old)
      score[state] = math.max(score[state] or 0, tonumber(ARGV[a + 7]))
    end
    old = ""
  end
  ending(olds, news, score, trim, state, old, ARGV[a + 3], ARGV[a + 4], byPart[i][1] == 1)
end
for _, state in ipairs(order) do
  if dels[state] then
    redis.pcall("HDEL", state, unpack(dels[state]))
  end
  if unmark[state] then
    redis.pcall("HSET", state, unpack(unmark[state]))
  end
  if olds[state] or news[state] then
    local cap, window = ledgerOf(of[state], function(i) return ARGV[8 * i - 4] ~= "" or ARGV[8 * i - 3] ~= "" end,
      function(i) return tonumber(ARGV[8 * i - 1]), tonumber(ARGV[8 * i]) end)
    record(KEYS[2 * of[state][1] - 1], state, olds[state] or {}, news[state] or {}, trim[state], score[state] or 0, cap, window)
  end
end
return out
