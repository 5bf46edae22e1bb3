-- Marks the start of won claims, or takes unmarked claims over from a holder that has
-- gone (docs/design.md, "Claims, start marks and takeover"); Redis runs the script
-- atomically, so of a mark and a takeover of one claim only the first succeeds.
--
-- A trigger key holds "{fencing token}/{token} {instance}" ("^{token}" for a claim made
-- ahead), as claim.lua wrote it. A claim won and not yet marked is entered in its
-- holder's register of unstarted claims (field: the engine's trigger key; value: the
-- holder's instance); the register is what tells a marked claim from an unmarked one: a
-- mark removes the entry, a takeover moves it to the new holder's register. (An older
-- release's claim, "{fencing token} {token} {instance}", is in no register this release
-- reads, so it is never taken over here; one it marked, with "!" before its token,
-- counts as marked.)
--
-- For claim i (1-based), KEYS[4i-3 .. 4i] and ARGV[i+5]:
-- KEYS[4i-3]  the trigger key
-- KEYS[4i-2]  the job's state: "{fencing token}" or "{fencing token} {mark}" (as
--             claim.lua keeps it)
-- KEYS[4i-1]  the register of unstarted claims of ARGV[2] (mark: the marking instance;
--             take: the holder that has gone), for this claim's job
-- KEYS[4i]    take: the register of ARGV[3], for this claim's job; mark: as KEYS[4i-1],
--             or, for a counted mark, the job's set of counted runs (see ARGV[3])
-- ARGV[i+5]   the engine's trigger key (without the prefix): the claim's register field
-- ARGV[1]     "mark" or "take"
-- ARGV[2]     mark: the instance whose claims to mark; take: the holder that has gone
-- ARGV[3]     take: the instance that takes the claims over; mark: "" (no run counted),
--             or a counted mark: each claim's max_runs, space-separated, in claim order
-- ARGV[4]     how long a claim made again here, after its hold ended, holds (PX, ms)
-- ARGV[5]     a random token, unique to this call: a claim (re)made here has the token
--             "{ARGV[5]}-{i}"
--
-- mark, per claim: 1 when the claim is ARGV[2]'s and now marked (or was already: a
-- mark whose reply was lost is sent again), else 0 (another holds it: it was taken
-- over, or never ARGV[2]'s). A claim whose key is gone (its hold ended) but that the
-- register still lists under ARGV[2] was never started nor taken over: it is made again
-- ("{the job's fencing token}/{token} {instance}", PX ARGV[4]), marked, and 1.
-- A counted mark (max_runs, docs/design.md) also counts the run, atomically with the
-- mark: its trigger key joins the job's set KEYS[4i] unless it is there already (a mark
-- sent again); a claim whose set already holds max_runs other keys is refused instead:
-- -3, its register entry removed all the same (settled: never taken over), nothing
-- counted. Sent again, a refused mark is refused again.
--
-- take, per claim: the fencing token of the claim for ARGV[3] — its own when ARGV[3]
-- holds it already (a takeover sent again), else a new one, the job's next (the state's
-- counter incremented, its mark kept), when ARGV[2] holds it unmarked (written
-- "{new}/{token} {ARGV[3]}", TTL kept) or when its key is gone and the register still
-- lists it under ARGV[2] (written with PX ARGV[4]); the register entry then moves to
-- ARGV[3]'s register. 0 (lost) when it is marked, or held by another, or gone and not
-- ARGV[2]'s; -2 when the job's state is not a slotcron state (nothing written).
--
-- Commands: one MGET of every trigger key; mark: one HDEL per register (one server: a
-- single register, the instance's), and per claim whose key is gone, an HGET, a GET
-- and a SET, and for a counted mark an SISMEMBER, an SCARD and an SADD; take, per
-- claim: an HGET, a GET and a SET of the state, a SET of the trigger key, an HDEL and an
-- HSET.
local op, instance, to, hold, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local n = math.floor(#KEYS / 4)

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

-- Whether claim i's entry is in ARGV[2]'s register, under `holder`.
local function listed(i, holder)
  return redis.call('HGET', KEYS[4 * i - 1], ARGV[i + 5]) == holder
end

-- trigger key -> its value now (false: none), as read and then written by this call.
local current = {}
-- register key -> the fields a mark removes from it.
local removed = {}

-- Each claim's max_runs, for a counted mark (ARGV[3]); empty otherwise.
local max_runs = {}
if op == 'mark' then
  for limit in string.gmatch(to, '%d+') do
    max_runs[#max_runs + 1] = tonumber(limit)
  end
end

-- Counts the run of claim i if its mark counts one: 1 (counted now, or before), or -3
-- when its job's max_runs are counted already.
local function count(i)
  local max, runs, field = max_runs[i], KEYS[4 * i], ARGV[i + 5]
  if not max or redis.call('SISMEMBER', runs, field) == 1 then
    return 1
  end
  if redis.call('SCARD', runs) >= max then
    return -3
  end
  redis.call('SADD', runs, field)
  return 1
end

-- Marks claim i for `instance`.
local function mark(i)
  local key, register, field = KEYS[4 * i - 3], KEYS[4 * i - 1], ARGV[i + 5]
  local value = current[key]
  if not value then
    if not listed(i, instance) then
      return 0
    end
    local fencing = state_of(redis.call('GET', KEYS[4 * i - 2])) or 0
    current[key] = string.format('%d/%s-%d %s', fencing, token, i, instance)
    redis.call('SET', key, current[key], 'NX', 'PX', hold)
  elseif string.match(value, '^%d+[/ ]%S+ (.*)$') ~= instance then
    return 0
  end
  local fields = removed[register] or {}
  removed[register] = fields
  fields[#fields + 1] = field
  return count(i)
end

-- Takes claim i over from `instance` for `to`.
local function take(i)
  local key, state, field = KEYS[4 * i - 3], KEYS[4 * i - 2], ARGV[i + 5]
  local value = current[key]
  local gone = not value
  if value then
    local fencing, marked, holder = string.match(value, '^(%d+)[/ ](!?)%S+ (.*)$')
    if not fencing or marked ~= '' then
      return 0
    end
    if holder == to then
      return tonumber(fencing)
    end
    if holder ~= instance then
      return 0
    end
  end
  if not listed(i, instance) then
    return 0
  end
  local fencing = next_fencing(state)
  if not fencing then
    return -2
  end
  current[key] = string.format('%d/%s-%d %s', fencing, token, i, to)
  if gone then
    redis.call('SET', key, current[key], 'PX', hold)
  else
    redis.call('SET', key, current[key], 'KEEPTTL')
  end
  redis.call('HDEL', KEYS[4 * i - 1], field)
  redis.call('HSET', KEYS[4 * i], field, to)
  return fencing
end

if op ~= 'mark' and op ~= 'take' then
  return redis.error_reply('unknown start operation ' .. tostring(op))
end
local keys = {}
for i = 1, n do
  keys[i] = KEYS[4 * i - 3]
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
  else
    results[i] = take(i)
  end
end
for register, fields in pairs(removed) do
  redis.call('HDEL', register, unpack(fields))
end
return results
