-- Prepended to every lock script that acts on any number of locks, after
-- base.lua. out is the script's answer; answer appends one lock's values
-- to it.
local out = {}
local function answer(...)
  for i = 1, select("#", ...) do
    out[#out + 1] = (select(i, ...))
  end
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
