-- Marks the start of won claims, or takes unmarked claims over from a holder that has
-- gone (docs/design.md, "Claims, start marks and takeover"); Redis runs the script
-- atomically, so of a mark and a takeover of one claim only the first succeeds.
--
-- A trigger key holds "{fencing token} {token} {instance}" ("^{token}" for a claim made
-- ahead), as claim.lua wrote it; a start mark puts "!" before the token, in place, with
-- the key's TTL kept. A claim won and not yet marked is entered in its job's register
-- of unstarted claims (field: the engine's trigger key; value: the holder's instance),
-- which a mark removes it from and a takeover moves to the new holder.
--
-- For claim i (1-based), KEYS[3i-2 .. 3i] and ARGV[2i+3 .. 2i+4]:
-- KEYS[3i-2]  the trigger key
-- KEYS[3i-1]  the job's state: "{fencing token}" or "{fencing token} {mark}" (as
--             claim.lua keeps it)
-- KEYS[3i]    the job's register of unstarted claims (a hash: trigger key -> instance)
-- ARGV[2i+3]  the engine's trigger key (without the prefix): the claim's register field
-- ARGV[2i+4]  a random token, for a claim (re)made here
-- ARGV[1]     "mark" or "take"
-- ARGV[2]     mark: the instance whose claims to mark; take: the holder that has gone
-- ARGV[3]     take: the instance that takes the claims over (mark: unused)
-- ARGV[4]     how long a claim made again here, after its hold ended, holds (PX, ms)
--
-- mark, per claim: 1 when the claim is ARGV[2]'s and now marked (or was already:
-- a mark whose reply was lost is sent again), else 0 (another holds it: it was taken
-- over, or never ARGV[2]'s). A claim whose key is gone (its hold ended) but that the
-- register still lists under ARGV[2] was never started nor taken over: it is made again,
-- marked ("{the job's fencing token} !{ARGV token} {instance}", PX ARGV[4]), and 1.
--
-- take, per claim: the fencing token of the claim for ARGV[3] — its own when ARGV[3]
-- holds it unmarked already (a takeover sent again), else a new one, the job's next
-- (the state's counter incremented, its mark kept), when ARGV[2] holds it unmarked
-- (written "{new} {ARGV token} {ARGV[3]}", TTL kept) or when its key is gone and the
-- register still lists it under ARGV[2] (written with PX ARGV[4]); the register entry
-- then moves to ARGV[3]. 0 (lost) when it is marked, or held by another, or gone and not
-- ARGV[2]'s; -2 when the job's state is not a slotcron state (nothing written).
--
-- Commands: one MGET of every trigger key; per claim marked, a SET (KEEPTTL) and an HDEL;
-- per claim taken over, a GET and a SET of the state, a SET of the trigger key and an
-- HSET; per claim whose key is gone, an HGET (and a GET of the state).
local op, instance, to, hold = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local n = math.floor(#KEYS / 3)

-- The fencing counter and the mark (nil: none) of a job's state value, or nil when it is
-- not a slotcron state.
local function state_of(value)
  if not value then
    return 0, nil
  end
  local f, m = string.match(value, '^(%d+) (%d+)$')
  if f then
    return tonumber(f), m
  end
  return tonumber(string.match(value, '^%d+$') or ''), nil
end

-- Increments the job's fencing counter in its state, as claim.lua does, keeping the
-- mark: the new token, or nil (nothing written) when the state is not a slotcron state.
local function next_fencing(state)
  local fencing, mark = state_of(redis.call('GET', state))
  if not fencing then
    return nil
  end
  fencing = fencing + 1
  if mark then
    redis.call('SET', state, string.format('%d %s', fencing, mark))
  else
    redis.call('SET', state, string.format('%d', fencing))
  end
  return fencing
end

-- Whether the register lists claim i's field under `holder` (its key is gone).
local function listed(i, holder)
  return redis.call('HGET', KEYS[3 * i], ARGV[2 * i + 3]) == holder
end

-- trigger key -> its value now (false: none), as read and then written by this call.
local current = {}

-- Marks claim i for `instance`.
local function mark(i)
  local key, register, field = KEYS[3 * i - 2], KEYS[3 * i], ARGV[2 * i + 3]
  local value = current[key]
  if not value then
    if not listed(i, instance) then
      return 0
    end
    local fencing = state_of(redis.call('GET', KEYS[3 * i - 1])) or 0
    current[key] = string.format('%d !%s %s', fencing, ARGV[2 * i + 4], instance)
    redis.call('SET', key, current[key], 'NX', 'PX', hold)
    redis.call('HDEL', register, field)
    return 1
  end
  local fencing, marked, token, holder = string.match(value, '^(%d+) (!?)(%S+) (.*)$')
  if holder ~= instance then
    return 0
  end
  if marked == '' then
    current[key] = string.format('%s !%s %s', fencing, token, holder)
    redis.call('SET', key, current[key], 'KEEPTTL')
    redis.call('HDEL', register, field)
  end
  return 1
end

-- Takes claim i over from `instance` for `to`.
local function take(i)
  local key, state, register, field = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i], ARGV[2 * i + 3]
  local value = current[key]
  local gone = not value
  if value then
    local fencing, marked, _, holder = string.match(value, '^(%d+) (!?)(%S+) (.*)$')
    if not fencing or marked ~= '' then
      return 0
    end
    if holder == to then
      return tonumber(fencing)
    end
    if holder ~= instance then
      return 0
    end
  elseif not listed(i, instance) then
    return 0
  end
  local fencing = next_fencing(state)
  if not fencing then
    return -2
  end
  current[key] = string.format('%d %s %s', fencing, ARGV[2 * i + 4], to)
  if gone then
    redis.call('SET', key, current[key], 'PX', hold)
  else
    redis.call('SET', key, current[key], 'KEEPTTL')
  end
  redis.call('HSET', register, field, to)
  return fencing
end

local keys = {}
for i = 1, n do
  keys[i] = KEYS[3 * i - 2]
end
local values = redis.call('MGET', unpack(keys))
for i = 1, n do
  if current[keys[i]] == nil then
    current[keys[i]] = values[i]
  end
end
local results = {}
for i = 1, n do
  if op == 'mark' then
    results[i] = mark(i)
  elseif op == 'take' then
    results[i] = take(i)
  else
    return redis.error_reply('unknown start operation ' .. tostring(op))
  end
end
return results
