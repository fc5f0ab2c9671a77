-- Second phase of acquisitions, any number in one call. Lock i has the
-- lock key KEYS[4i-3], its shard's state hash KEYS[4i-2] and ledger
-- KEYS[4i-1], and its trigger key KEYS[4i], and the arguments
-- ARGV[9i-7..9i+1]: name, value, fence, occurrence, record, score, cap,
-- window and ticket. While the lock still holds value, and the
-- acquisition has its ticket (unless ""), raise the lock's fence counter
-- to fence and its occurrence mark to occurrence (each "0" to leave it;
-- neither is ever lowered), when either is raised give the state a TTL of
-- ARGV[1] ms, and add "s|" .. record (unless "") to the ledger (see record
-- in the prelude). The locks of one shard are read and written together.
-- A ticket is a trigger's request: the acquisition has it when the trigger
-- key holds it, and takes it (deletes the key and notes ticket|value in
-- the state, so that a commit sent again still has it); a ticket taken by
-- another acquisition, or gone, fails the commit here (result 0).
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- (and the ticket was had), 0 if not, -1 if the keys could not be read or
-- the state holds a field that is not a number (detail = the error).
local n = #KEYS / 4
local cur = redis.call("MGET", unpack(keysAt(n, 4, 1)))
local wrong = wrongTypes(n, 4, 1, cur)
local st = {}
local order, of = groups(n, 4, 2)
for _, state in ipairs(order) do
  local fields, held = {}, {}
  for _, i in ipairs(of[state]) do
    if cur[i] == ARGV[9 * i - 6] then
      local name = ARGV[9 * i - 7]
      fields[#fields + 1] = "f|" .. name
      fields[#fields + 1] = "m|" .. name
      fields[#fields + 1] = "t|" .. name
      held[#held + 1] = i
    end
  end
  if #held > 0 then
    local r = redis.pcall("HMGET", state, unpack(fields))
    for j, i in ipairs(held) do
      st[i] = failed(r) and r or {r[3 * j - 2], r[3 * j - 1], r[3 * j]}
    end
  end
end

local raise, adds, score = {}, {}, {}
for i = 1, n do
  local state, trigger = KEYS[4 * i - 2], KEYS[4 * i]
  local a = 9 * i - 7
  local name, value, f, o, ticket = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 8]
  local s = st[i]
  local req = s and not failed(s) and ticket ~= "" and redis.pcall("GET", trigger)
  local bad = s and not failed(s) and badState(state, name, s[1], s[2])
  if cur[i] ~= value then
    answer(wrong[i] and -1 or 0, wrong[i] or "")
  elseif failed(s) then
    answer(-1, s.err)
  elseif bad then
    answer(-1, bad)
  elseif failed(req) then
    answer(-1, req.err)
  elseif ticket ~= "" and req ~= ticket and s[3] ~= ticket .. "|" .. value then
    answer(0, "ticket")
  else
    local r = raise[state] or {}
    raise[state] = r
    if f > 0 and tonumber(s[1] or "0") < f then
      r[#r + 1] = "f|" .. name
      r[#r + 1] = ARGV[a + 2]
    end
    if o > 0 and tonumber(s[2] or "0") < o then
      r[#r + 1] = "m|" .. name
      r[#r + 1] = ARGV[a + 3]
    end
    if req == ticket then
      redis.call("DEL", trigger)
      r[#r + 1] = "t|" .. name
      r[#r + 1] = ticket .. "|" .. value
    end
    if ARGV[a + 4] ~= "" then
      local add = adds[state] or {}
      adds[state] = add
      add[#add + 1] = ARGV[a + 5]
      add[#add + 1] = "s|" .. ARGV[a + 4]
      score[state] = math.max(score[state] or 0, tonumber(ARGV[a + 5]))
    end
    answer(1, "")
  end
end

for _, state in ipairs(order) do
  local r = raise[state]
  if r and #r > 0 then
    redis.call("HSET", state, unpack(r))
    keep(state, ARGV[1])
  end
  if adds[state] then
    local cap, window = ledgerOf(of[state], function(i) return ARGV[9 * i - 3] ~= "" end,
      function(i) return tonumber(ARGV[9 * i - 1]), tonumber(ARGV[9 * i]) end)
    record(KEYS[4 * of[state][1] - 1], state, {}, adds[state], true, score[state], cap, window)
  end
end
return out
