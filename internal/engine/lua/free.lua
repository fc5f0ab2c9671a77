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
-- and "s|" .. old removed; an old "c|" .. the part's name as JSON says
-- that its started record is its claim's member (see claim.lua), which
-- stays beside the final record, or, for a claim given up whose running
-- value was still there, loses the part's name (a claim given up sends
-- its record's text after the name and a newline, removed if there is no
-- such member: a record sent whole). ARGV[1] is unused (a leading argument, so that calls
-- merge). Returns {result_1, detail_1, ...}: 1 if the part was running
-- (its value there, its parent holding), 0 if not, -1 if its state could
-- not be read (detail = the error).
local n = #KEYS / 2
local order, of = groups(n, 2, 2)

-- unclaim takes the part whose name is q (as JSON) out of the claims'
-- members at score occ of the ledger (see claim.lua), or else removes
-- its started record text, sent whole: a claim given up never ran.
-- Called only where the part's claim holds its running value, so that no
-- other claim of that tick came to this node.
local function unclaim(ledger, occ, q, text)
  local ms = redis.pcall("ZRANGEBYSCORE", ledger, occ, occ)
  if failed(ms) then
    return
  end
  for _, m in ipairs(ms) do
    if string.sub(m, 1, 11) == 'c|{"jobs":[' then
      local from = 11
      while true do
        local i = string.find(m, q, from, true)
        if not i then
          break
        end
        local before, after = string.sub(m, i - 1, i - 1), string.sub(m, i + #q, i + #q)
        if (before == "[" or before == ",") and (after == "," or after == "]") then
          local left
          if after == "," then
            left = string.sub(m, 1, i - 1) .. string.sub(m, i + #q + 1)
          elseif before == "," then
            left = string.sub(m, 1, i - 2) .. string.sub(m, i + #q)
          end
          redis.pcall("ZREM", ledger, m)
          if left then
            redis.pcall("ZADD", ledger, occ, left)
          end
          return
        end
        from = i + 1
      end
    end
  end
  redis.pcall("ZREM", ledger, "s|" .. text)
end

local parents = {}
local dels, olds, news, trim, score, unmark = {}, {}, {}, {}, {}, {}
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
      if ARGV[a + 7] ~= "0" and string.sub(ARGV[a + 2], 1, 2) == "c|" then
        local q, text = string.match(ARGV[a + 2], "^c|([^\n]*)\n(.*)$")
        if q then
          unclaim(KEYS[2 * i - 1], ARGV[a + 7], q, text)
        end
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
  local old = string.sub(ARGV[a + 2], 1, 2) == "c|" and "" or ARGV[a + 2]
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
