-- Claim occurrences of locks held as parts, any number in one call, all of
-- one shard. A part has no key of its own: its occurrence mark, fence and
-- running value are fields of its shard's state, and it is held while the
-- parent its running value names ("parent key \n parent value \n value")
-- holds that value. Only the holder of a right (a shard's lease) claims:
-- KEYS[1] is the right's lock key, KEYS[2] and KEYS[3] the shard's state
-- hash and ledger; part i has the lock key KEYS[2i+2] (its own lock, which
-- excludes the part while held) and the pause key KEYS[2i+3]. ARGV[1] ==
-- "1" asks for the server's uptime and run id (as acquire does); ARGV[2]
-- is the right's value, ARGV[3] the state's TTL (ms), ARGV[4] and ARGV[5]
-- the ledger's cap and window (ms); part i's name, running value,
-- occurrence (unix ms), fence and record are ARGV[5i+2..5i+6] (after the
-- ends, below).
-- While the right holds its value, a part is claimed unless its occurrence
-- is at or below its mark, it is paused, its lock is held, another part of
-- it still runs, its fence counter is at or above the fence asked for
-- (unless "0": fencing off), or the parent its running value names does
-- not hold that value here (it would not run here); claimed, its mark and fence (unless "0") are
-- raised to the occurrence and fence, its running value is set, and "s|"
-- .. record is added to the ledger. The parts' keys are read together
-- (MGET, one HMGET) and written together (one HSET, one ZADD).
-- First, whatever the right: ARGV[6] is the number of parts of the shard
-- to end (frees, see free.lua), each with its name, running value, old,
-- record and score at ARGV[5k+2..5k+6]; the parts claimed follow them
-- (their arguments shifted by 5 per free). The ends' and the claims'
-- records share the ledger's commands.
-- Returns {uptime, run_id, status_1, fence_1, detail_1, ...}: the statuses
-- of acquire (1 claimed, 0 held by detail, 2 already run, 3 paused, -1
-- error), 4 when the fence counter is at or above the fence (detail: the
-- counter), and 5 when the right, or the part's parent, does not hold its
-- value here (detail: what holds it, "" for nothing).
local uptime, runid = "", ""
if ARGV[1] == "1" then
  local info = redis.pcall("INFO", "server")
  if type(info) == "string" then
    uptime = string.match(info, "uptime_in_seconds:([^\r\n]*)") or "?"
    runid = string.match(info, "run_id:([^\r\n]*)") or "?"
  else
    uptime, runid = "?", "?"
  end
end
answer(uptime, runid)

local n = (#KEYS - 3) / 2
local right, state, ledger = KEYS[1], KEYS[2], KEYS[3]
local parents, olds, adds, score = {}, {}, {}, 0
local ends = tonumber(ARGV[6])
if ends > 0 then
  local fields, dels = {}, {}
  for k = 1, ends do
    fields[k] = "r|" .. ARGV[5 * k + 2]
  end
  local r = redis.pcall("HMGET", state, unpack(fields))
  for k = 1, ends do
    local a = 5 * k + 2
    local held = not failed(r) and r[k] == ARGV[a + 1]
    if held then
      dels[#dels + 1] = fields[k]
      held = runningHere(r[k], parents) ~= nil
    end
    if ARGV[a + 2] ~= "" then
      olds[#olds + 1] = "s|" .. ARGV[a + 2]
    end
    if ARGV[a + 3] ~= "" then
      adds[#adds + 1] = ARGV[a + 4]
      adds[#adds + 1] = (held and "r|" or "l|") .. ARGV[a + 3]
      score = math.max(score, tonumber(ARGV[a + 4]))
    end
  end
  if #dels > 0 then
    redis.pcall("HDEL", state, unpack(dels))
  end
end
local base = 5 * ends -- the parts' arguments follow the ends'

local holder = redis.call("GET", right)
if holder ~= ARGV[2] then
  for i = 1, n do
    answer(5, "0", holder or "")
  end
  if #olds > 0 or #adds > 0 then
    record(ledger, state, olds, adds, false, score, tonumber(ARGV[4]), tonumber(ARGV[5]))
  end
  return out
end

local locks, pauses, fields = {}, {}, {}
for i = 1, n do
  locks[i], pauses[i] = KEYS[2 * i + 2], KEYS[2 * i + 3]
  local name = ARGV[base + 5 * i + 2]
  fields[#fields + 1] = "f|" .. name
  fields[#fields + 1] = "m|" .. name
  fields[#fields + 1] = "r|" .. name
end
local cur = redis.call("MGET", unpack(locks))
local paused = pausesOf(pauses)
local st = redis.pcall("HMGET", state, unpack(fields))
if failed(st) then
  for i = 1, n do
    answer(-1, "0", st.err)
  end
  return out
end

local set, trim = {}, false
for i = 1, n do
  local a = base + 5 * i + 2
  local name, run, occ, fence = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local f, m, r = st[3 * i - 2], st[3 * i - 1], st[3 * i]
  local bad = badState(state, name, f, m)
  local running = r and runningHere(r, parents)
  f = f or "0"
  if bad then
    answer(-1, "0", bad)
  elseif m and tonumber(m) >= tonumber(occ) then
    answer(2, f, m)
  elseif paused[i] then
    answer(3, f, paused[i])
  elseif cur[i] then
    answer(0, f, cur[i])
  elseif running then
    answer(0, f, running)
  elseif fence ~= "0" and tonumber(f) >= tonumber(fence) then
    answer(4, f, f)
  elseif not runningHere(run, parents) then
    -- Its parent does not hold here: the part would not run here.
    answer(5, f, parents[string.match(run, "^([^\n]*)")] or "")
  else
    if fence ~= "0" then
      set[#set + 1] = "f|" .. name
      set[#set + 1] = fence
    end
    set[#set + 1] = "m|" .. name
    set[#set + 1] = occ
    set[#set + 1] = "r|" .. name
    set[#set + 1] = run
    if ARGV[a + 4] ~= "" then
      adds[#adds + 1] = occ
      adds[#adds + 1] = "s|" .. ARGV[a + 4]
      score = math.max(score, tonumber(occ))
      trim = true -- a record added, not replaced
    end
    answer(1, f, "")
  end
end
if #set > 0 then
  redis.call("HSET", state, unpack(set))
  keep(state, ARGV[3])
end
if #olds > 0 or #adds > 0 then
  record(ledger, state, olds, adds, trim, score, tonumber(ARGV[4]), tonumber(ARGV[5]))
end
return out
