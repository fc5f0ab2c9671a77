-- Prepended to every lock script. out is the script's answer; answer
-- appends one lock's values to it; failed tells an error reply of
-- redis.pcall, so that one lock's error does not stop the others.
local out = {}
local function answer(...)
  for i = 1, select("#", ...) do
    out[#out + 1] = (select(i, ...))
  end
end
local function failed(r)
  return type(r) == "table" and r.err ~= nil
end

-- badState returns an error text when the fields fence and mark of the
-- state hash, as HMGET read them into st, are not whole numbers below 2^53
-- (Lua compares numbers as doubles, exact only below it), and nil when
-- they are (or are absent): bad data at one lock fails that lock alone.
local function badState(key, st)
  local names = {"fence", "mark"}
  for i = 1, 2 do
    if st[i] and (not string.match(st[i], "^%d+$") or #st[i] > 16 or tonumber(st[i]) >= 9007199254740992) then
      return "ERR state " .. key .. ": field " .. names[i] .. " is not a whole number below 2^53: " .. st[i]
    end
  end
  return nil
end
