-- Compare-and-pexpire: while KEYS[1] holds value ARGV[1], set its TTL to
-- ARGV[2] ms. Returns 1 if the value held, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
