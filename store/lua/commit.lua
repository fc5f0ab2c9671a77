-- Second phase of an acquisition: while KEYS[1] still holds value ARGV[1],
-- raise the fence counter in the state hash KEYS[2] to ARGV[2] and the
-- occurrence mark to ARGV[3] (each "0" to leave it), and give the state
-- hash a TTL of ARGV[4] ms. Returns 1 if the value held, else 0.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
local touched = false
local f = tonumber(ARGV[2])
if f > 0 then
  local cur = tonumber(redis.call("HGET", KEYS[2], "fence") or "0")
  if cur < f then
    redis.call("HSET", KEYS[2], "fence", ARGV[2])
  end
  touched = true
end
local o = tonumber(ARGV[3])
if o > 0 then
  local mark = tonumber(redis.call("HGET", KEYS[2], "mark") or "0")
  if mark < o then
    redis.call("HSET", KEYS[2], "mark", ARGV[3])
  end
  touched = true
end
if touched then
  redis.call("PEXPIRE", KEYS[2], ARGV[4])
end
return 1
