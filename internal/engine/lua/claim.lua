-- Claim occurrences of locks held as parts, any number in one call, all of
-- one shard, under one parent, with one value, occurrence and fence. A
-- part has no key of its own: its occurrence mark, fence and running value
-- are fields of its shard's state, and it is held while the parent its
-- running value names ("parent key \n parent value \n value") holds that
-- value. Only the holder of a right (a shard's lease) claims: KEYS[1] is
-- the right's lock key, KEYS[2] and KEYS[3] the shard's state hash and
-- ledger, KEYS[4] the parent's lock key. A part's lock key (its own lock,
-- which excludes the part while held) and pause key are its shard's, built
-- here from the state key and its name as Keyspace.Lock does (a claim goes
-- to a single server only, so the keys need not be declared).
-- ARGV[1] == "1" asks for the server's uptime and run id (as acquire
-- does); ARGV[2] is the right's value, ARGV[3] the state's TTL (ms),
-- ARGV[4] and ARGV[5] the ledger's cap and window (ms), ARGV[6] the number
-- of ends (below), ARGV[7] the parent's value; ARGV[8], ARGV[9] and
-- ARGV[10] the parts' value, occurrence (unix ms) and fence; ARGV[11] the
-- claim's record (below); ARGV[12] the number of the ends' running values,
-- which follow; then the ends' final records (below) and their score;
-- then the ends' own arguments (below); and last part i's name and m, two
-- per part.
-- The ledger gets one member per call for the parts' started records, the
-- claim's: "c|", the number of parts listed in it, "|", the number of
-- them voided since (0, see free.lua), "|", the positions (from 1,
-- comma-separated) of those not claimed, "|", the claim's record, a JSON
-- object of their names ("jobs") and the fields they share, built by the
-- caller, a newline, the parts' value, a newline, and the names voided
-- since (as JSON strings, comma-separated: none). A part's m is "" when
-- it is listed in it (in their order), "-" when it has no started record,
-- and otherwise its started record as a member of its own. The member is
-- added when any listed part is claimed.
-- While the right holds its value and the parent its own, a part is
-- claimed unless its occurrence is at or below its mark, it is paused, its
-- lock is held, another part of it still runs, or its fence counter is at
-- or above the fence asked for (unless "0": fencing off); claimed, its
-- mark and fence (unless "0") are raised to the occurrence and fence, its
-- running value is set, and its started record is added to the ledger. The
-- parts' keys are read together (MGET, one HMGET) and written together
-- (one HSET, one ZADD).
-- Whatever the right: the ends are parts of the shard to end (frees, see
-- free.lua), each with its name, the index of its running value among
-- the ends' (from 1), its old member (its started record as a member of
-- its own, or "") and its position in the final records (from 1, 0 for
-- none). The final records, a JSON array, are one member ("" for none),
-- at their score: "e|", the positions of the lost ones (their part no
-- longer ran here), "|" and the array; a final record stands beside its
-- claim's member (the ledger's readers take a final record over a
-- started one). The end of a part whose job is claimed again in the call
-- (its next tick) is read with the claim's fields and its field written
-- over; the others are read and deleted first. The ends' and the claims'
-- records share the ledger's commands.
-- Returns {uptime, run_id, status_1, fence_1, detail_1, ...}: the statuses
-- of acquire (1 claimed, 0 held by detail, 2 already run, 3 paused, -1
-- error), 4 when the fence counter is at or above the fence (detail: the
-- counter), and 5 when the right, or the parent, does not hold its value
-- here (detail: what holds it, "" for nothing).
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
out[1], out[2] = uptime, runid
local o = 2 -- the answers' length

local right, state, ledger, pkey, pvalue = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[7]
local value, occ, fence, claimText = ARGV[8], ARGV[9], ARGV[10], ARGV[11]
local parents, olds, adds, score = {}, {}, {}, 0
local ends = tonumber(ARGV[6])
local head = 12 + tonumber(ARGV[12]) -- the ends' finals, then their own arguments, follow
local finals, finalScore = ARGV[head + 1], ARGV[head + 2]
local lost = {} -- the positions in finals of the ends that no longer held here
local base = head + 2 + 4 * ends -- and the parts' follow theirs
local n = (#ARGV - base) / 2
local tag = string.sub(state, 1, -6) -- the state key less "state": the shard's keys begin so

-- endArg returns argument j (0 name, 1 running value, 2 old member, 3
-- position in the final records) of end k.
local function endArg(k, j)
  local a = head + 2 + 4 * (k - 1) + 1
  if j == 1 then
    return ARGV[12 + tonumber(ARGV[a + 1])]
  end
  return ARGV[a + j]
end

-- endRecord notes end k's ledger record: its started member of its own,
-- if any, removed, and its final record, in finals, lost if it no longer
-- held here.
local function endRecord(k, held)
  local old, pos = endArg(k, 2), endArg(k, 3)
  if old ~= "" then
    olds[#olds + 1] = old
  end
  if pos ~= "0" and not held then
    lost[#lost + 1] = pos
  end
end

-- finish adds the ends' finals (their member: "e|", the positions of the
-- lost ones, "|" and the records) and the claim's member (see above), when
-- any of its parts was claimed, to the ledger.
local function finish(refused, listed, trim)
  if finals ~= "" then
    adds[#adds + 1] = finalScore
    adds[#adds + 1] = "e|" .. table.concat(lost, ",") .. "|" .. finals
    score = math.max(score, tonumber(finalScore))
  end
  if listed > #refused then
    adds[#adds + 1] = occ
    adds[#adds + 1] = "c|" .. listed .. "|0|" .. table.concat(refused, ",") .. "|" .. claimText .. "\n" .. value .. "\n"
    score = math.max(score, tonumber(occ))
    trim = true
  end
  if #olds > 0 or #adds > 0 then
    record(ledger, state, olds, adds, trim, score, tonumber(ARGV[4]), tonumber(ARGV[5]))
  end
end

-- heldHere reports whether the parent of the running value r holds here:
-- at once for the call's parent (prefix) once it is known to hold
-- (parentHolds).
local prefix = pkey .. "\n" .. pvalue .. "\n"
local function heldHere(r, parentHolds)
  return parentHolds and string.find(r, prefix, 1, true) == 1 or runningHere(r, parents) ~= nil
end

-- endAll ends the ends ks (indices) on their own: each field whose value
-- is still the end's running value is deleted. parentHolds: the call's
-- parent holds here.
local function endAll(ks, parentHolds)
  if #ks == 0 then
    return
  end
  local fields, dels = {}, {}
  for j, k in ipairs(ks) do
    fields[j] = "r|" .. endArg(k, 0)
  end
  local r = redis.pcall("HMGET", state, unpack(fields))
  for j, k in ipairs(ks) do
    local held = not failed(r) and r[j] == endArg(k, 1)
    if held then
      dels[#dels + 1] = fields[j]
      held = heldHere(r[j], parentHolds)
    end
    endRecord(k, held)
  end
  if #dels > 0 then
    redis.pcall("HDEL", state, unpack(dels))
  end
end

local holder = redis.call("GET", right)
local gone = holder ~= ARGV[2] and (holder or "")
if not gone then
  -- Its parent does not hold here: no part would run here.
  local now = parentOf(pkey, parents)
  gone = now ~= pvalue and (now or "")
end
if gone then
  local all = {}
  for k = 1, ends do
    all[k] = k
  end
  endAll(all, false)
  for i = 1, n do
    out[o + 1], out[o + 2], out[o + 3] = 5, "0", gone
    o = o + 3
  end
  finish({}, 0, false)
  return out
end

-- An end of a part claimed again in this call (its job's next tick, the
-- common case) is read with the claim's fields: mine[name] is its index.
local claimed, mine, apart = {}, {}, {}
for i = 1, n do
  claimed[ARGV[base + 2 * i - 1]] = true
end
for k = 1, ends do
  local name = endArg(k, 0)
  if claimed[name] and not mine[name] then
    mine[name] = k
  else
    apart[#apart + 1] = k
  end
end
endAll(apart, true)

local locks, pauses, fields = {}, {}, {}
for i = 1, n do
  local name = ARGV[base + 2 * i - 1]
  locks[i], pauses[i] = tag .. name .. ":lock", tag .. name .. ":paused"
  fields[3 * i - 2] = "f|" .. name
  fields[3 * i - 1] = "m|" .. name
  fields[3 * i] = "r|" .. name
end
local cur = redis.call("MGET", unpack(locks))
local paused = pausesOf(pauses)
local st = redis.pcall("HMGET", state, unpack(fields))
if failed(st) then
  for i = 1, n do
    out[o + 1], out[o + 2], out[o + 3] = -1, "0", st.err
    o = o + 3
  end
  return out
end

local set, dels, trim, refused, listed = {}, {}, false, {}, 0
local running = prefix .. value -- every part's running value
local occn = tonumber(occ)
for i = 1, n do
  local name, listing = ARGV[base + 2 * i - 1], ARGV[base + 2 * i]
  local f, m, r = st[3 * i - 2], st[3 * i - 1], st[3 * i]
  if listing == "" then
    listed = listed + 1
  end
  local bad, fn, mn = badState(state, name, f, m)
  local k = mine[name]
  if k then
    -- Its part's end comes with it: ended where its field still holds the
    -- end's running value (deleted below unless claimed).
    mine[name] = nil
    if r and r == endArg(k, 1) then
      endRecord(k, heldHere(r, true))
      r = nil
      dels[#dels + 1] = fields[3 * i]
    else
      endRecord(k, false)
    end
  end
  local other = r and runningHere(r, parents)
  local status, detail = 1, ""
  f = f or "0"
  if bad then
    status, f, detail = -1, "0", bad
  elseif mn and mn >= occn then
    status, detail = 2, m
  elseif paused[i] then
    status, detail = 3, paused[i]
  elseif cur[i] then
    status, detail = 0, cur[i]
  elseif other then
    status, detail = 0, other
  elseif fence ~= "0" and (fn or 0) >= tonumber(fence) then
    status, detail = 4, f
  else
    local s = #set
    if fence ~= "0" then
      set[s + 1], set[s + 2] = fields[3 * i - 2], fence
      s = s + 2
    end
    set[s + 1], set[s + 2], set[s + 3], set[s + 4] = fields[3 * i - 1], occ, fields[3 * i], running
    if dels[#dels] == fields[3 * i] then
      dels[#dels] = nil -- its end's field is written over
    end
    if listing ~= "" and listing ~= "-" then
      adds[#adds + 1] = occ
      adds[#adds + 1] = listing
      score = math.max(score, occn)
      trim = true -- a record added, not replaced
    end
  end
  if status ~= 1 and listing == "" then
    refused[#refused + 1] = listed
  end
  out[o + 1], out[o + 2], out[o + 3] = status, f, detail
  o = o + 3
end
if #dels > 0 then
  redis.pcall("HDEL", state, unpack(dels))
end
if #set > 0 then
  redis.call("HSET", state, unpack(set))
  keep(state, ARGV[3])
end
finish(refused, listed, trim)
return out
