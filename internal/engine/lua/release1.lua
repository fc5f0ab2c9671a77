-- release.lua for one lock, with its keys and arguments, its effects and
-- its answer: the node's worker sends it for a release call that carries
-- one lock (none merged with it), because release.lua's generality (any
-- number of locks, by shard) costs a server as much as its commands. It
-- runs after base.lua only.
local lock, state = KEYS[1], KEYS[2]
local name, value, o = ARGV[2], ARGV[3], tonumber(ARGV[4])
local old, new = ARGV[5], ARGV[6]
local result, detail = 0, ""
local cur = redis.pcall("GET", lock)
if failed(cur) then
  local t = redis.pcall("TYPE", lock)
  t = type(t) == "table" and t.ok or "none"
  result, detail = -1, "WRONGTYPE " .. lock .. " holds a " .. t .. ", not a lock's string"
elseif cur == value then
  local mark = "0"
  if o > 0 then
    local m = redis.pcall("HGET", state, "m|" .. name)
    if failed(m) then
      result, detail = -1, m.err -- the lock is left to its TTL
    else
      mark = m or "0"
      local bad = badState(state, name, "0", mark)
      if bad then
        result, detail = -1, bad -- the lock is left to its TTL
      end
    end
  end
  if result == 0 then
    if o > 0 and tonumber(mark) < o then
      redis.call("HSET", state, "m|" .. name, ARGV[4])
      keep(state, ARGV[1])
    end
    redis.call("DEL", lock)
    if o == 0 then -- a lock claiming an occurrence has no waiters
      notify(lock, "released")
    end
    result = 1
  end
end
if old ~= "" or new ~= "" then
  local olds, news = {}, {}
  if old ~= "" then
    olds[1] = "s|" .. old
  end
  if new ~= "" then
    news[1], news[2] = ARGV[7], (result == 1 and "r|" or "l|") .. new
  end
  record(KEYS[3], state, olds, news, old == "", tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]))
end
return {result, detail}
