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

