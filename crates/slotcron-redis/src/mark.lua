-- Marks the start of won claims on one server, where one register holds every unstarted
-- claim of an instance (docs/design.md, "Claims, start marks and takeover"): start.lua's
-- `mark` for the common case, with one key per claim instead of four. A claim whose key
-- is gone is left to start.lua (answer -1, nothing written for it), which makes it again.
--
-- KEYS[1]     the register of unstarted claims of ARGV[1]
-- KEYS[i+1]   claim i's trigger key (1-based)
-- ARGV[1]     the instance whose claims to mark
-- ARGV[i+1]   claim i's engine trigger key: its register field
--
-- Per claim: 1 when the claim is ARGV[1]'s and now marked (or was already: a mark whose
-- reply was lost is sent again), 0 when another holds it (taken over, or never
-- ARGV[1]'s), -1 when its key is gone. Commands: one MGET, one HDEL.
local instance, n = ARGV[1], #KEYS - 1
local keys = {}
for i = 1, n do
  keys[i] = KEYS[i + 1]
end
local values = redis.call('MGET', unpack(keys))
local results, fields = {}, {}
for i = 1, n do
  local value = values[i]
  if not value then
    results[i] = -1
  elseif string.match(value, '^%d+[/ ]%S+ (.*)$') ~= instance then
    results[i] = 0
  else
    results[i] = 1
    fields[#fields + 1] = ARGV[i + 1]
  end
end
if #fields > 0 then
  redis.call('HDEL', KEYS[1], unpack(fields))
end
return results
