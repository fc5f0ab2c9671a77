-- commit.lua for one lock, with its keys and arguments, its effects and
-- its answer: the node's worker sends it for a commit call that carries
-- one lock (none merged with it), because commit.lua's generality (any
-- number of locks, by shard) costs a server as much as its commands. It
-- runs after base.lua only.
local lock, state, trigger = KEYS[1], KEYS[2], KEYS[4]
local name, value, f, o, ticket = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[10]
local cur = redis.pcall("GET", lock)
if failed(cur) then
  local t = redis.pcall("TYPE", lock)
  t = type(t) == "table" and t.ok or "none"
  return {-1, "WRONGTYPE " .. lock .. " holds a " .. t .. ", not a lock's string"}
elseif cur ~= value then
  return {0, ""}
end
local s = redis.pcall("HMGET", state, "f|" .. name, "m|" .. name, "t|" .. name)
if failed(s) then
  return {-1, s.err}
end
local bad = badState(state, name, s[1], s[2])
if bad then
  return {-1, bad}
end
local req = ticket ~= "" and redis.pcall("GET", trigger)
if failed(req) then
  return {-1, req.err}
elseif ticket ~= "" and req ~= ticket and s[3] ~= ticket .. "|" .. value then
  return {0, "ticket"}
end
local raise = {}
if f > 0 and tonumber(s[1] or "0") < f then
  raise[#raise + 1] = "f|" .. name
  raise[#raise + 1] = ARGV[4]
end
if o > 0 and tonumber(s[2] or "0") < o then
  raise[#raise + 1] = "m|" .. name
  raise[#raise + 1] = ARGV[5]
end
if req == ticket then
  redis.call("DEL", trigger)
  raise[#raise + 1] = "t|" .. name
  raise[#raise + 1] = ticket .. "|" .. value
end
if #raise > 0 then
  redis.call("HSET", state, unpack(raise))
  keep(state, ARGV[1])
end
if ARGV[6] ~= "" then
  record(KEYS[3], state, {}, {ARGV[7], "s|" .. ARGV[6]}, true, tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]))
end
return {1, ""}
