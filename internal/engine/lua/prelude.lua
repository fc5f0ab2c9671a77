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

-- groups returns the distinct keys at position at of each of n locks of
-- width keys (KEYS[width * (i - 1) + at]), in the order first seen, and
-- for each key the locks that have it: the locks of one shard share their
-- state and ledger, which are read and written once for all of them.
local function groups(n, width, at)
  local order, of = {}, {}
  for i = 1, n do
    local k = KEYS[width * (i - 1) + at]
    if not of[k] then
      of[k] = {}
      order[#order + 1] = k
    end
    table.insert(of[k], i)
  end
  return order, of
end

-- keysAt returns the keys at position at of each of n locks of width
-- keys, for MGET.
local function keysAt(n, width, at)
  local ks = {}
  for i = 1, n do
    ks[i] = KEYS[width * (i - 1) + at]
  end
  return ks
end

-- wrongTypes returns, by lock, the errors of the lock keys (at position at
-- of each of n locks of width keys) that MGET read as absent (false in
-- cur) but hold another type: one EXISTS for all of them, and a TYPE for
-- each only when some exists (bad data), so that locks gone (a lease
-- expired, an abandoned attempt's release) cost no command of their own.
local function wrongTypes(n, width, at, cur)
  local gone, idx = {}, {}
  for i = 1, n do
    if not cur[i] then
      gone[#gone + 1] = KEYS[width * (i - 1) + at]
      idx[#idx + 1] = i
    end
  end
  local out = {}
  if #gone == 0 or redis.call("EXISTS", unpack(gone)) == 0 then
    return out
  end
  for j, key in ipairs(gone) do
    local t = redis.pcall("TYPE", key)
    t = type(t) == "table" and t.ok or "none"
    if t ~= "none" then
      out[idx[j]] = "WRONGTYPE " .. key .. " holds a " .. t .. ", not a lock's string"
    end
  end
  return out
end

-- wrongType returns the error of a lock key that MGET read as absent
-- (false): nil when it is absent, a WRONGTYPE text when it holds another
-- type, so that a bad key fails its lock alone, loudly.
local function wrongType(key)
  local t = redis.pcall("TYPE", key)
  t = type(t) == "table" and t.ok or "none"
  if t == "none" then
    return nil
  end
  return "WRONGTYPE " .. key .. " holds a " .. t .. ", not a lock's string"
end

-- badState returns an error text when a lock's fence and mark, as its
-- shard's state hash (key) holds them, are not whole numbers below 2^53
-- (Lua compares numbers as doubles, exact only below it), and nil when
-- they are (or are absent): bad data at one lock fails that lock alone.
-- Its second and third results are the fence and the mark as numbers
-- (nil when absent).
local function badNumber(v)
  if not v then
    return false, nil
  end
  local x = string.find(v, "^%d+$") and #v <= 16 and tonumber(v)
  return not x or x >= 9007199254740992, x
end
local function badState(key, name, fence, mark)
  local bf, f = badNumber(fence)
  if bf then
    return "ERR state " .. key .. ": field f|" .. name .. " is not a whole number below 2^53: " .. fence
  end
  local bm, m = badNumber(mark)
  if bm then
    return "ERR state " .. key .. ": field m|" .. name .. " is not a whole number below 2^53: " .. mark
  end
  return nil, f, m
end

-- keep gives a shard's state hash a TTL of ttl ms unless it already lives
-- longer: the hash holds the marks of all its locks, which lockers with
-- different state TTLs may share, and a mark must live as long as the
-- longest asked for.
local function keep(state, ttl)
  local left = redis.pcall("PTTL", state)
  if type(left) == "number" and left >= 0 and left < tonumber(ttl) then
    redis.pcall("PEXPIRE", state, ttl)
  elseif left == -1 then
    redis.pcall("PEXPIRE", state, ttl)
  end
end

-- record writes records to a shard's ledger (key), a sorted set of record
-- texts by score (a tick, or a start, in unix ms): it removes the members
-- olds, adds news (score, member, score, member, ...), and if trim is set
-- keeps the newest cap records per lock of the shard (half the fields of
-- its state hash, state, rounded down), noting in the state's field "~trimmed"
-- the highest score it ever dropped (the ledger proves nothing at or
-- below it), and drops those older than window ms before score; either
-- way it gives the ledger a TTL of window. The ledger is a log, not the
-- lock: its errors (a key of another type) are ignored, so that they
-- never fail the locks' own answers.
local function record(key, state, olds, news, trim, score, cap, window)
  if #olds > 0 then
    redis.pcall("ZREM", key, unpack(olds))
  end
  if #news == 0 or failed(redis.pcall("ZADD", key, unpack(news))) then
    return
  end
  if trim then
    local fields = redis.pcall("HLEN", state)
    local limit = cap * math.max(1, math.floor((type(fields) == "number" and fields or 0) / 2))
    local count = redis.pcall("ZCARD", key)
    if type(count) == "number" and count > limit then
      local last = redis.pcall("ZRANGE", key, count - limit - 1, count - limit - 1, "WITHSCORES")
      local dropped = type(last) == "table" and tonumber(last[2])
      if dropped then
        local floor = redis.pcall("HGET", state, "~trimmed")
        if not failed(floor) and (not floor or tonumber(floor) == nil or tonumber(floor) < dropped) then
          redis.pcall("HSET", state, "~trimmed", string.format("%d", dropped))
        end
      end
      redis.pcall("ZREMRANGEBYRANK", key, 0, count - limit - 1)
    end
    redis.pcall("ZREMRANGEBYSCORE", key, "-inf", "(" .. (score - window))
  end
  -- Always: a replacement that removed the last member made the key anew.
  redis.pcall("PEXPIRE", key, window)
end

-- ledgerOf returns the cap and window of the records among locks (indices)
-- that carry one, their largest (at (i) returns a lock's cap and window):
-- a lock without a record (the ledger off, an abandoned acquisition) says
-- nothing of the ledger's bounds.
local function ledgerOf(locks, carries, at)
  local cap, window = 0, 0
  for _, i in ipairs(locks) do
    if carries(i) then
      local c, w = at(i)
      cap, window = math.max(cap, c), math.max(window, w)
    end
  end
  return cap, window
end

-- parentOf returns the value a parent's lock key (pk) holds on this node,
-- false for none, read once per call: parents keeps the values read.
local function parentOf(pk, parents)
  if parents[pk] == nil then
    local now = redis.pcall("GET", pk)
    parents[pk] = type(now) == "string" and now or false
  end
  return parents[pk]
end

-- runningHere returns the value of a part (see claim) from its running
-- value r ("parent key \n parent value \n value"), while its parent holds
-- that value on this node, and nil once the parent is gone: the part ended
-- with it. parents keeps the parents' values read (false for none), so
-- that a call reads each parent once.
local function runningHere(r, parents)
  local pk, pv, v = string.match(r, "^([^\n]*)\n([^\n]*)\n(.*)$")
  if not pk then
    return nil
  end
  return parentOf(pk, parents) == pv and v or nil
end

-- pausesOf returns the values of pause keys (one MGET), "?" for a pause
-- key of another type: it still pauses its lock (fail closed), found with
-- one EXISTS for all of them and one each only when some is.
local function pausesOf(pauses)
  local paused = redis.call("MGET", unpack(pauses))
  local strings = 0
  for i = 1, #pauses do
    if paused[i] then
      strings = strings + 1
    end
  end
  if redis.call("EXISTS", unpack(pauses)) > strings then
    for i = 1, #pauses do
      if not paused[i] and redis.call("EXISTS", pauses[i]) == 1 then
        paused[i] = "?"
      end
    end
  end
  return paused
end

-- ending notes, by state, a lock's (or a part's) record at its end: the
-- started record old replaced by new (either "" for none) at score,
-- prefixed "r|" when it still held and "l|" when not, in the tables olds,
-- news, scores and trims that record is then called with per state (trim
-- when a record is added, not replaced).
local function ending(olds, news, scores, trims, state, old, new, score, held)
  if old ~= "" then
    olds[state] = olds[state] or {}
    table.insert(olds[state], "s|" .. old)
  end
  if new ~= "" then
    news[state] = news[state] or {}
    table.insert(news[state], score)
    table.insert(news[state], (held and "r|" or "l|") .. new)
    scores[state] = math.max(scores[state] or 0, tonumber(score))
    trims[state] = trims[state] or old == ""
  end
end
