-- Compare-and-pexpire, any number of locks in one call: while the lock
-- KEYS[i] holds value ARGV[2i], set its TTL to ARGV[2i+1] ms. ARGV[1] ==
-- "heal" also sets the value, with that TTL, where the lock is free: a
-- copy of a lock held on a quorum, given back to a node that lost it.
-- Returns {result_1, detail_1, result_2, ...}: result 1 if the value held
-- (or was set), 0 if not, -1 if the lock could not be read (detail = the
-- server's error).
local heal = ARGV[1] == "heal"
for i = 1, #KEYS do
  local cur = redis.pcall("GET", KEYS[i])
  if failed(cur) then
    answer(-1, cur.err)
  elseif cur == ARGV[2 * i] then
    redis.call("PEXPIRE", KEYS[i], ARGV[2 * i + 1])
    answer(1, "")
  elseif heal and not cur then
    redis.call("SET", KEYS[i], ARGV[2 * i], "PX", ARGV[2 * i + 1])
    answer(1, "")
  else
    answer(0, "")
  end
end
return out
