-- Compare-and-delete: while KEYS[1] holds value ARGV[1], raise the
-- occurrence mark in the state hash KEYS[2] to ARGV[2] ("0" to leave it;
-- when raised, the state hash gets a TTL of ARGV[3] ms) and delete KEYS[1].
-- Returns 1 if the value held and was deleted, else 0.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
local o = tonumber(ARGV[2])
if o > 0 then
  local mark = tonumber(redis.call("HGET", KEYS[2], "mark") or "0")
  if mark < o then
    redis.call("HSET", KEYS[2], "mark", ARGV[2])
    redis.call("PEXPIRE", KEYS[2], ARGV[3])
  end
end
redis.call("DEL", KEYS[1])
return 1
