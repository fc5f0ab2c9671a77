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
-- given up sends "x|", its name as JSON, a newline and its started
-- record as old: where its running value was still there, its name is
-- noted as voided in its claim's member (found at the occurrence by the
-- parts' value), which is removed once every part it lists was refused or
-- voided (the claim never ran), or else, with no such member (its record
-- was sent whole), its own started record is removed. ARGV[1] is unused
-- (a leading argument, so that calls merge). Returns {result_1, detail_1, ...}: 1 if the part was running
-- (its value there, its parent holding), 0 if not, -1 if its state could
-- not be read (detail = the error).
local n = #KEYS / 2
local order, of = groups(n, 2, 2)

local parents = {}
local dels, olds, news, trim, score, unmark, voided = {}, {}, {}, {}, {}, {}, {}
local voids, voidOrder = {}, {} -- the parts voided, by claim member (see below)
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
      -- Its claim's member, by ledger, occurrence and the parts' value.
      local q, text = string.match(old, "^x|([^\n]*)\n(.*)$")
      local value = string.match(ARGV[a + 1], "^[^\n]*\n[^\n]*\n(.*)$")
      if q and value then
        local key = KEYS[2 * i - 1] .. "\n" .. ARGV[a + 7] .. "\n" .. value
        if not voids[key] then
          voids[key] = {ledger = KEYS[2 * i - 1], occ = ARGV[a + 7], value = value, names = {}, texts = {}}
          voidOrder[#voidOrder + 1] = key
        end
        table.insert(voids[key].names, q)
        table.insert(voids[key].texts, text)
      end
    end
    old = ""
  end
  ending(olds, news, score, trim, state, old, ARGV[a + 3], ARGV[a + 4], byPart[i][1] == 1)
end
-- The parts voided are noted in their claim's member, which goes once
-- none of the parts it lists stands; a part sent whole (no such member)
-- has its own started record removed.
for _, key in ipairs(voidOrder) do
  local v = voids[key]
  local ms = redis.pcall("ZRANGEBYSCORE", v.ledger, v.occ, v.occ)
  local found
  if not failed(ms) then
    local tail = "\n" .. v.value .. "\n"
    for _, m in ipairs(ms) do
      if string.sub(m, 1, 2) == "c|" and string.find(m, tail, 1, true) then
        found = m
        break
      end
    end
  end
  if found then
    local listed, count, refused, body = string.match(found, "^c|(%d+)|(%d+)|([%d,]*)|(.*)$")
    local cut = #body - string.find(string.reverse(body), "\n", 1, true) + 1 -- the last newline
    local before, names = string.sub(body, 1, cut), string.sub(body, cut + 1)
    local refusals = refused == "" and 0 or #string.gsub(refused, "[^,]", "") + 1
    count = tonumber(count) + #v.names
    redis.pcall("ZREM", v.ledger, found)
    if refusals + count < tonumber(listed) then
      names = (names == "" and "" or names .. ",") .. table.concat(v.names, ",")
      redis.pcall("ZADD", v.ledger, v.occ, "c|" .. listed .. "|" .. count .. "|" .. refused .. "|" .. before .. names)
    end
  else
    for _, text in ipairs(v.texts) do
      redis.pcall("ZREM", v.ledger, "s|" .. text)
    end
  end
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
