-- Prepended to every lock script. failed tells an error reply of
-- redis.pcall, so that one lock's error does not stop the others.
local function failed(r)
  return type(r) == "table" and r.err ~= nil
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
-- longest asked for. With slack (ms), a TTL that far short of ttl is left
-- as it is: for a fence raised without a mark (a lock on one node, see
-- acquire), whose counter may start over from the time floor, and which
-- leaves every mark's TTL as long as its own commit made it.
local function keep(state, ttl, slack)
  local left = redis.pcall("PTTL", state)
  if type(left) == "number" and left >= 0 and left < tonumber(ttl) - (slack or 0) then
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
-- way it gives the ledger a TTL of window (unless it has one within a
-- minute, or an eighth of the window if shorter, of it). A trim runs once the ledger
-- holds a quarter more than it keeps (rounded down), so that most writes
-- cost three commands (ZADD, ZCARD, PTTL) and one in a quarter of the
-- cap a few more; a ledger under that keeps its records, however old,
-- until its key expires, window after its last write. The ledger is a
-- log, not the lock: its errors (a key of another type) are ignored, so
-- that they never fail the locks' own answers.
-- Final records ("r|" and "l|"), when news has more than one, are added
-- as one member, as claim's ends are: "e|", the positions of the lost ones
-- (from 1, comma-separated), "|" and their JSON array, at the highest of
-- their scores (the ledger's readers take each record out).
local function record(key, state, olds, news, trim, score, cap, window)
  if #olds > 0 then
    redis.pcall("ZREM", key, unpack(olds))
  end
  local finals = 0
  for i = 2, #news, 2 do
    local p = string.sub(news[i], 1, 2)
    if p == "r|" or p == "l|" then
      finals = finals + 1
    end
  end
  if finals > 1 then
    local kept, recs, lost, top = {}, {}, {}, 0
    for i = 1, #news, 2 do
      local p = string.sub(news[i + 1], 1, 2)
      if p == "r|" or p == "l|" then
        recs[#recs + 1] = string.sub(news[i + 1], 3)
        if p == "l|" then
          lost[#lost + 1] = #recs
        end
        top = math.max(top, tonumber(news[i]))
      else
        kept[#kept + 1], kept[#kept + 2] = news[i], news[i + 1]
      end
    end
    kept[#kept + 1] = top
    kept[#kept + 1] = "e|" .. table.concat(lost, ",") .. "|[" .. table.concat(recs, ",") .. "]"
    news = kept
  end
  if #news == 0 or failed(redis.pcall("ZADD", key, unpack(news))) then
    return
  end
  local count = trim and redis.pcall("ZCARD", key)
  -- Every lock keeps cap records at least: no trim below a quarter more.
  if type(count) == "number" and count > cap + math.floor(cap / 4) then
    local fields = redis.pcall("HLEN", state)
    local limit = cap * math.max(1, math.floor((type(fields) == "number" and fields or 0) / 2))
    if count > limit + math.floor(limit / 4) then
      local last = redis.pcall("ZRANGE", key, count - limit - 1, count - limit - 1, "WITHSCORES")
      local dropped = type(last) == "table" and tonumber(last[2])
      if dropped then
        local floor = redis.pcall("HGET", state, "~trimmed")
        if not failed(floor) and (not floor or tonumber(floor) == nil or tonumber(floor) < dropped) then
          redis.pcall("HSET", state, "~trimmed", string.format("%d", dropped))
        end
      end
      redis.pcall("ZREMRANGEBYRANK", key, 0, count - limit - 1)
      redis.pcall("ZREMRANGEBYSCORE", key, "-inf", "(" .. (score - window))
    end
  end
  -- Always: a replacement that removed the last member made the key anew.
  -- A TTL less than a minute (an eighth of the window if shorter) below
  -- the window is left: reading it costs a server less than writing it.
  local left = redis.pcall("PTTL", key)
  if type(left) ~= "number" or left < window - math.min(60000, math.floor(window / 8)) then
    redis.pcall("PEXPIRE", key, window)
  end
end

-- precedes reports whether the waiter a ("id|start", see acquire) comes
-- before b: the earlier start, then the smaller id.
local function precedes(a, b)
  local sa, sb = tonumber(string.match(a, "|(%d+)$")) or 0, tonumber(string.match(b, "|(%d+)$")) or 0
  if sa ~= sb then
    return sa < sb
  end
  return a < b
end

-- notify publishes msg on a lock's channel (its key's name) when some
-- client of this server is subscribed to it: a waiter (see acquire).
local function notify(lock, msg)
  local subs = redis.pcall("PUBSUB", "NUMSUB", lock)
  if type(subs) == "table" and tonumber(subs[2]) and tonumber(subs[2]) > 0 then
    redis.pcall("PUBLISH", lock, msg)
  end
end

-- leftOn returns how long key has left to live (ms, PTTL), 0 when it is
-- nil, gone or without a TTL: how long what holds a lock (its key, its
-- part's parent key, or its waiters' turn) holds it on this node, for an
-- acquire script's answer.
local function leftOn(key)
  local ms = key and redis.pcall("PTTL", key)
  return type(ms) == "number" and ms > 0 and ms or 0
end
