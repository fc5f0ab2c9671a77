-- Prepended to every lock script. out is the script's answer; answer
-- appends one lock's values to it; failed tells an error reply of
-- redis.pcall, so that one lock's error does not stop the others.
local out = {}
local function answer(...)
  for i = 1, select("#", ...) do
    out[#out + 1] = (select(i, ...))
  end
end
local function failed(r)
  return type(r) == "table" and r.err ~= nil
end

-- badState returns an error text when the fields fence and mark of the
-- state hash, as HMGET read them into st, are not whole numbers below 2^53
-- (Lua compares numbers as doubles, exact only below it), and nil when
-- they are (or are absent): bad data at one lock fails that lock alone.
local function badState(key, st)
  local names = {"fence", "mark"}
  for i = 1, 2 do
    if st[i] and (not string.match(st[i], "^%d+$") or #st[i] > 16 or tonumber(st[i]) >= 9007199254740992) then
      return "ERR state " .. key .. ": field " .. names[i] .. " is not a whole number below 2^53: " .. st[i]
    end
  end
  return nil
end

-- record writes one record to a lock's ledger, a sorted set of record
-- texts by score (a tick, or a start, in unix ms): it removes the text
-- old (unless ""), adds new at score, keeps the newest cap records and
-- those within window ms of score, and gives the ledger a TTL of window.
-- The ledger is a log, not the lock: its errors (a key of another type)
-- are ignored, so that they never fail the lock's own answer.
local function record(key, old, new, score, cap, window)
  if new == "" and old == "" then
    return
  end
  if old ~= "" then
    redis.pcall("ZREM", key, old)
  end
  if new == "" or failed(redis.pcall("ZADD", key, score, new)) then
    return
  end
  redis.pcall("ZREMRANGEBYRANK", key, 0, -cap - 1)
  redis.pcall("ZREMRANGEBYSCORE", key, "-inf", "(" .. (score - window))
  redis.pcall("PEXPIRE", key, window)
end
