-- Fenced write: set the hash KEYS[1] to {fence = ARGV[1], value = ARGV[2]}
-- only if ARGV[1] is larger than the fence it holds. Returns 1 if written,
-- 0 if refused because a write with an equal or larger fence came first.
local cur = tonumber(redis.call("HGET", KEYS[1], "fence") or "0")
if tonumber(ARGV[1]) <= cur then
  return 0
end
redis.call("HSET", KEYS[1], "fence", ARGV[1], "value", ARGV[2])
return 1
