-- Starts or voids one owner's claims ahead of one trigger instant; atomic.
--
-- KEYS[1]     the owner's start latch of the instant: "p" once claims ahead were made,
--             "1" once the owner started them, "0" once a non-owner voided them
-- KEYS[2..]   start: the set of paused jobs' names, KEYS[2], the owner's register of
--             unstarted claims (start.lua; one server: one per instance), KEYS[3], and,
--             when the start is sent again after a lost reply, the m trigger keys of the
--             claims to mark, KEYS[4..m+3]; void: the n trigger keys a non-owner
--             expected the owner to claim, KEYS[2..n+1], then the owner's registers of
--             unstarted claims for them, KEYS[n+2..2n+1]
-- ARGV[1]     "start" or "void"
-- ARGV[2]     until when either may act, in ms since the Unix epoch on the server's
--             clock (TIME)
-- ARGV[3]     when the latch expires (PXAT, ms): later than ARGV[2]
-- ARGV[4]     the owner's instance id
-- ARGV[5..]   start: the engine's trigger keys (without the prefix) of the owner's claims
--             ahead whose start to mark, their fields in KEYS[3]; void: those of
--             KEYS[2..n+1], their fields in the registers
--
-- start: if the latch is, or is now, "1", marks the start of each claim given (the
-- instant's start is their start mark: one call for a whole burst) and returns
-- { the paused jobs' names (SMEMBERS of KEYS[2]), one integer per claim }: 1 when the
-- claim was in the owner's register and is now marked (its entry removed), 0 when it
-- was not (another replica took it over: it must not run). A start of a latch that was
-- "1" already (sent again) cannot tell a claim it marked before from one taken over
-- without the claims' keys: such a claim is -1 (send the start again with the trigger
-- keys), and with them 1 if its key still holds the owner's claim, else 0. nil if the
-- latch is "0", or ARGV[2] has passed.
-- void: 1 if the latch is "1", or ARGV[2] has passed and it is not "0" (the claims
-- ahead stand); 0 (and the latch set to "0") if there is no latch: no claim ahead was
-- made; else sets it to "0", deletes every key of KEYS[2..n+1] that holds an unmarked
-- claim ahead of the owner ("{fencing}/^{token} {owner}" whose entry is still in the
-- owner's register: a start mark removed it)
-- and its register entry, and returns 2 if the latch was "p" (this void voided claims
-- ahead), 3 if it was "0" already (another void did).
--
-- Commands: TIME, GET and SET of the latch; void: per chunk of 1,000 trigger keys an
-- MGET, a DEL of those dropped and an HDEL per claim ahead of the owner; start: per chunk
-- of 1,000 claims an HMGET and an HDEL of the register (and, sent again, an MGET of the
-- trigger keys), and SMEMBERS.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local latch, limit, expires = KEYS[1], tonumber(ARGV[2]), ARGV[3]
local state = redis.call('GET', latch)
local chunk = 1000

-- Marks the claims ARGV[5..] of the owner ARGV[4] (see "start" above), in chunks (a
-- Lua call takes a bounded number of arguments): one integer per claim.
local function mark_all(again)
  local owner, register, keyed = ARGV[4], KEYS[3], #KEYS > 3
  local marked = {}
  for first = 5, #ARGV, chunk do
    local last = math.min(first + chunk - 1, #ARGV)
    local listed = redis.call('HMGET', register, unpack(ARGV, first, last))
    local held = keyed and redis.call('MGET', unpack(KEYS, first - 1, last - 1)) or {}
    local fields = {}
    for j = 1, #listed do
      local answer = 0
      if listed[j] == owner then
        fields[#fields + 1] = ARGV[first + j - 1]
        answer = 1
      elseif keyed then
        answer = (held[j] and string.match(held[j], '^%d+[/ ]%S+ (.*)$') == owner) and 1 or 0
      elseif again then
        answer = -1
      end
      marked[#marked + 1] = answer
    end
    if #fields > 0 then
      redis.call('HDEL', register, unpack(fields))
    end
  end
  return marked
end

if ARGV[1] == 'start' then
  if state ~= '1' then
    if state == '0' or now > limit then
      return nil
    end
    redis.call('SET', latch, '1', 'PXAT', expires)
  end
  return { redis.call('SMEMBERS', KEYS[2]), mark_all(state == '1') }
end
if state == '1' or (state ~= '0' and now > limit) then
  return 1
end
local answer = 0
if state == 'p' then
  answer = 2
elseif state == '0' then
  answer = 3
else
  -- No claims ahead were made: nothing to drop, and none is made from now on.
  redis.call('SET', latch, '0', 'PXAT', expires)
  return 0
end
if state == 'p' then
  redis.call('SET', latch, '0', 'PXAT', expires)
end
-- The owner's claims ahead among KEYS[2..n+1], dropped in chunks (a Lua call takes a
-- bounded number of arguments), with their register entries.
local suffix = ' ' .. ARGV[4]
local n = math.floor((#KEYS - 1) / 2)
for first = 2, n + 1, chunk do
  local keys = {}
  for i = first, math.min(first + chunk - 1, n + 1) do
    keys[#keys + 1] = KEYS[i]
  end
  local values = redis.call('MGET', unpack(keys))
  local dropped = {}
  for j = 1, #keys do
    local value = values[j]
    local i = first + j - 1
    if value and string.find(value, '^%d+/%^') and string.sub(value, -#suffix) == suffix
        and redis.call('HDEL', KEYS[i + n], ARGV[i + 3]) == 1 then
      dropped[#dropped + 1] = keys[j]
    end
  end
  if #dropped > 0 then
    redis.call('DEL', unpack(dropped))
  end
end
return answer
