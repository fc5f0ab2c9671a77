-- acquire.lua for one lock, with its keys and arguments, its effects and
-- its answer: the node's worker sends it for an acquire call that carries
-- one lock (none merged with it), because acquire.lua's generality (any
-- number of locks, by shard) costs a server as much as its commands. It
-- runs after base.lua only.
local lock, state, turnKey = KEYS[1], KEYS[2], KEYS[4]
local name, value, ttl, occ = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local waiter = ARGV[8]
local uptime, runid = "", ""
if ARGV[1] == "1" then
  local info = redis.pcall("INFO", "server")
  if type(info) == "string" then
    uptime = string.match(info, "uptime_in_seconds:([^\r\n]*)") or "?"
    runid = string.match(info, "run_id:([^\r\n]*)") or "?"
  else
    uptime, runid = "?", "?" -- INFO failed: unreadable, not "not asked"
  end
end

local st = redis.pcall("HMGET", state, "f|" .. name, "m|" .. name, "r|" .. name)
if failed(st) then
  return {uptime, runid, -1, "0", st.err, 0}
end
local bad = badState(state, name, st[1], st[2])
if bad then
  return {uptime, runid, -1, "0", bad, 0}
end
local f, m = st[1] or "0", st[2]
if occ > 0 and m and tonumber(m) >= occ then
  return {uptime, runid, 2, f, m, 0}
end
if occ > 0 then
  local p = redis.pcall("GET", KEYS[3])
  if failed(p) then
    return {uptime, runid, 3, f, "?", 0} -- a pause key of another type still pauses (fail closed)
  elseif p then
    return {uptime, runid, 3, f, p, 0}
  end
end
local turn = occ == 0 and redis.pcall("GET", turnKey)
turn = type(turn) == "string" and turn
local running, parent
if st[3] then -- a running value: held while its parent holds (see claim)
  local pk, pv, v = string.match(st[3], "^([^\n]*)\n([^\n]*)\n(.*)$")
  if pk and redis.pcall("GET", pk) == pv then
    running, parent = v, pk
  end
end
if running or turn and turn ~= waiter and (waiter == "" or not precedes(waiter, turn)) then
  local cur = redis.pcall("GET", lock)
  if cur == value then
    redis.call("DEL", lock) -- set by this attempt's plain commands (see engine's plainAcquire)
    cur = false
  end
  local holder = running or type(cur) == "string" and cur or "turn " .. turn
  local heldBy = running and parent or type(cur) == "string" and lock or turnKey
  return {uptime, runid, 0, f, holder, leftOn(heldBy)}
end

local set = redis.pcall("SET", lock, value, "NX", "PX", ttl)
local cur = not failed(set) and not (type(set) == "table" and set.ok) and redis.pcall("GET", lock)
if type(set) == "table" and set.ok or cur == value then
  if cur == value then -- ours already: this attempt's call sent again
    redis.call("PEXPIRE", lock, ttl)
  end
  local floor = tonumber(ARGV[6])
  if floor > 0 then -- the fence committed with the vote
    f = string.format("%d", math.max(tonumber(f) + 1, floor))
    redis.call("HSET", state, "f|" .. name, f)
    keep(state, ARGV[7], 60000)
  end
  if turn then -- ours, or a later waiter's: the next waiter takes it
    redis.call("DEL", turnKey)
    notify(lock, "turn")
  end
  return {uptime, runid, 1, f, "", 0}
elseif type(cur) == "string" then
  if waiter ~= "" then -- the turn is ours: none comes before us
    redis.call("SET", turnKey, waiter, "PX", ARGV[9])
  end
  return {uptime, runid, 0, f, cur, leftOn(lock)}
end
local t = redis.pcall("TYPE", lock)
t = type(t) == "table" and t.ok or "none"
local err = failed(set) and set.err or (t ~= "none" and "WRONGTYPE " .. lock .. " holds a " .. t .. ", not a lock's string")
return {uptime, runid, -1, "0", err or ("ERR " .. lock .. " could not be set"), 0}
