-- Starts or voids one owner's claims ahead of one trigger instant; atomic.
--
-- KEYS[1]     the owner's start latch of the instant: "p" once claims ahead were made,
--             "1" once the owner started them, "0" once a non-owner voided them
-- KEYS[2..]   start: the set of paused jobs' names; void: the trigger keys a non-owner
--             expected the owner to claim
-- ARGV[1]     "start" or "void"
-- ARGV[2]     until when either may act, in ms since the Unix epoch on the server's
--             clock (TIME)
-- ARGV[3]     when the latch expires (PXAT, ms): later than ARGV[2]
-- ARGV[4]     (void only) the owner's instance id
--
-- start: the paused jobs' names (SMEMBERS of KEYS[2]) if the latch is, or is now, "1";
-- nil if it is "0", or ARGV[2] has passed.
-- void: 1 if the latch is "1", or ARGV[2] has passed and it is not "0" (the claims
-- ahead stand); else sets it to "0", deletes every key of KEYS[2..] that holds a claim
-- ahead of the owner ("{fencing} ^{token} {owner}"), and returns 2 if the owner had made
-- claims ahead (the latch was "p", or a claim ahead was deleted), 0 if not.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local latch, limit, expires = KEYS[1], tonumber(ARGV[2]), ARGV[3]
local state = redis.call('GET', latch)
if ARGV[1] == 'start' then
  if state ~= '1' then
    if state == '0' or now > limit then
      return nil
    end
    redis.call('SET', latch, '1', 'PXAT', expires)
  end
  return redis.call('SMEMBERS', KEYS[2])
end
if state == '1' or (state ~= '0' and now > limit) then
  return 1
end
local ahead = state == 'p'
if state ~= '0' then
  redis.call('SET', latch, '0', 'PXAT', expires)
end
if #KEYS > 1 then
  local keys = {}
  for i = 2, #KEYS do
    keys[i - 1] = KEYS[i]
  end
  local values = redis.call('MGET', unpack(keys))
  local suffix = ' ' .. ARGV[4]
  local dropped = {}
  for i, value in ipairs(values) do
    if value and string.find(value, '^%d+ %^') and string.sub(value, -#suffix) == suffix then
      dropped[#dropped + 1] = keys[i]
    end
  end
  if #dropped > 0 then
    ahead = true
    redis.call('DEL', unpack(dropped))
  end
end
if ahead then
  return 2
end
return 0
