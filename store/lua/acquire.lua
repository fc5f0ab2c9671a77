-- Acquire the lock KEYS[1] for value ARGV[1] with a TTL of ARGV[2] ms,
-- unless the occurrence ARGV[3] (unix ms, "0" for none) is at or below the
-- occurrence mark kept in the state hash KEYS[2].
-- ARGV[4] == "1" asks for the server's uptime (seconds), for the restart check.
-- Returns {status, fence, detail, uptime}:
--   status 1: acquired (or already ours), detail ""
--   status 0: held by another value, detail = that value
--   status 2: occurrence already run, detail = the mark
-- fence is the node's fence counter (a decimal string, "0" when unset);
-- uptime is -1 when not asked for.
local uptime = -1
if ARGV[4] == "1" then
  local info = redis.call("INFO", "server")
  uptime = tonumber(string.match(info, "uptime_in_seconds:(%d+)")) or -1
end
local fence = redis.call("HGET", KEYS[2], "fence") or "0"
local cur = redis.call("GET", KEYS[1])
if cur == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, fence, "", uptime}
end
local occ = tonumber(ARGV[3])
if occ > 0 then
  local mark = redis.call("HGET", KEYS[2], "mark")
  if mark and tonumber(mark) >= occ then
    return {2, fence, mark, uptime}
  end
end
if cur then
  return {0, fence, cur, uptime}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return {1, fence, "", uptime}
