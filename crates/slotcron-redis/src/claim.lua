-- Claims a batch of slotcron triggers (one or many); Redis runs the script atomically,
-- so the claims are made one after the other, in order, as separate claims would be.
--
-- For claim i (1-based), KEYS[5i-4 .. 5i] and ARGV[6i-5 .. 6i]:
-- KEYS[5i-4]  the trigger key
-- KEYS[5i-3]  the job's state: "{fencing token}" (as INCR left it), or
--             "{fencing token} {mark}" once a recurring trigger was granted, the mark
--             being the newest recurring trigger granted, in ms
-- KEYS[5i-2]  the job's high-water mark key of releases before the state held the mark:
--             read only while the state has no mark, never written
-- KEYS[5i-1]  the job's pause: present while the job is paused, never written
-- KEYS[5i]    the claimant's register of unstarted claims for this job (a hash: trigger
--             key -> instance; one server: one per instance, a cluster: one per job)
-- ARGV[6i-5]  the claimant: "{token} {instance}"
-- ARGV[6i-4]  the trigger, in milliseconds since the Unix epoch
-- ARGV[6i-3]  recurring: how long after its trigger the claim holds at least, in ms
--             (max(slot, run budget) + slack); "" for a one-shot, or for a run an
--             operator asked for (manual, backfill, caught up at a resume) under a key
--             of its own
-- ARGV[6i-2]  recurring: how long after the claim it holds at least (slot + slack), in
--             ms; otherwise how long it is retained, in ms, "0" for ever
-- ARGV[6i-1]  "1" if the job's pause refuses the claim, "0" for a run an operator asked
--             for
-- ARGV[6i]    the engine's trigger key (without the prefix): the claim's field in the
--             register
--
-- Claims ahead (all of one owner at one instant, before it comes): one more key after
-- the claims', KEYS[5n+1], the owner's start latch of the instant, and one more
-- argument, ARGV[6n+1], when the latch is to expire (PXAT, ms). A latch of "0" (the
-- owner's start was voided) refuses every claim (0, lost, nothing written); no latch is
-- set to "p" (claims ahead made, not started) before the claims are made; "1" (started)
-- changes nothing. The claimant of a claim ahead starts with "^".
--
-- Returns one integer per claim: the new fencing token when won (or this claimant's own
-- token, when a claim made again after a lost reply finds its own claim), 0 when the
-- trigger key is held (lost), -3 when the job is paused (nothing written), -1 when the
-- high-water mark refuses the trigger (it is at or before the mark and at least
-- ARGV[6i-3] old on the server's clock, TIME, so its claim may have expired), -2 when
-- the job's state is not a slotcron state (nothing is claimed then). A won recurring
-- claim expires at the later of trigger + ARGV[6i-3] and now + ARGV[6i-2] (PXAT, the
-- server's clock) and moves the mark up to its trigger. The
-- trigger key's value is "{fencing token}/{claimant}", so a claimant whose reply was lost
-- can read back whether it won and which token it got. (An older release wrote
-- "{fencing token} {claimant}" and marked a start in place, "{fencing token}
-- !{claimant}": its scripts read this release's claims as held by another, so a fleet of
-- mixed releases never runs a trigger twice.) Every won claim is also entered in its register, field
-- ARGV[6i], value the claimant's instance, until its start mark or takeover removes or
-- moves it (start.lua): one HSET per register, so one per call on one server.
--
-- Commands: one MGET of every trigger key, TIME once (if a free trigger is recurring), one
-- MGET of the states and pauses (and one of the old marks while a state has none) of
-- the jobs whose trigger is free, a SET per won claim, one MSET of the states changed, and
-- one HSET per register written (one server: one in all).
local n = math.floor(#KEYS / 5)
local triggers, results = {}, {}
local latch = KEYS[5 * n + 1]
if latch then
  local started = redis.call('GET', latch)
  if started == '0' then
    for i = 1, n do
      results[i] = 0
    end
    return results
  end
  if not started then
    redis.call('SET', latch, 'p', 'PXAT', ARGV[6 * n + 1])
  end
end
for i = 1, n do
  triggers[i] = KEYS[5 * i - 4]
end
local held = redis.call('MGET', unpack(triggers))
local now
-- The states and pauses of the jobs whose triggers are free, read once per job.
local free_states, free_marks, free_pauses, seen = {}, {}, {}, {}
for i = 1, n do
  local state = KEYS[5 * i - 3]
  if not held[i] and not seen[state] then
    seen[state] = true
    free_states[#free_states + 1] = state
    free_marks[#free_marks + 1] = KEYS[5 * i - 2]
    free_pauses[#free_pauses + 1] = KEYS[5 * i - 1]
  end
  if not held[i] and ARGV[6 * i - 3] ~= '' and not now then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
end
-- state key -> { fencing, mark } (mark nil: none yet); false: not a slotcron state.
-- state key -> true while its job is paused.
local jobs, paused, changed = {}, {}, {}
if #free_states > 0 then
  local read = {}
  for k, state in ipairs(free_states) do
    read[k] = state
    read[#free_states + k] = free_pauses[k]
  end
  local values = redis.call('MGET', unpack(read))
  local old = {}
  for k, state in ipairs(free_states) do
    paused[state] = values[#free_states + k] ~= false
    local value = values[k]
    local fencing, mark
    if not value then
      fencing = 0
    else
      local f, m = string.match(value, '^(%d+) (%d+)$')
      if f then
        fencing, mark = tonumber(f), tonumber(m)
      else
        fencing = tonumber(string.match(value, '^%d+$') or '')
      end
    end
    if fencing then
      jobs[state] = { fencing, mark }
      if not mark then
        old[#old + 1] = k
      end
    else
      jobs[state] = false
    end
  end
  if #old > 0 then
    local keys = {}
    for j, k in ipairs(old) do
      keys[j] = free_marks[k]
    end
    local marks = redis.call('MGET', unpack(keys))
    for j, k in ipairs(old) do
      jobs[free_states[k]][2] = tonumber(marks[j] or '')
    end
  end
end
-- register key -> { field, instance, field, instance... } of the claims won.
local taken, registers = {}, {}
for i = 1, n do
  local key, state = KEYS[5 * i - 4], KEYS[5 * i - 3]
  local claimant, trigger = ARGV[6 * i - 5], tonumber(ARGV[6 * i - 4])
  local after_trigger, after = ARGV[6 * i - 3], ARGV[6 * i - 2]
  local value = held[i]
  if value or taken[key] then
    -- Held: lost, unless it is this very claim (made again after a lost reply): its
    -- value is the fencing token, "/" and the claimant (an older release's: a space,
    -- and "!" before the claimant once marked).
    results[i] = 0
    if value then
      local fencing, rest = string.match(value, '^(%d+)[/ ]!?(.*)$')
      if rest == claimant then
        results[i] = tonumber(fencing)
      end
    end
  elseif paused[state] and ARGV[6 * i - 1] == '1' then
    results[i] = -3
  elseif not jobs[state] then
    results[i] = -2
  else
    local job = jobs[state]
    local recurring = after_trigger ~= ''
    local expires
    if recurring then
      local mark = job[2]
      if mark and trigger <= mark and now >= trigger + tonumber(after_trigger) then
        results[i] = -1
      else
        expires = math.max(trigger + tonumber(after_trigger), now + tonumber(after))
      end
    end
    if not results[i] then
      -- NX: a key of another type (MGET reads it as nil) is not overwritten: lost.
      local claimed = string.format('%d/%s', job[1] + 1, claimant)
      local set
      if recurring then
        set = redis.call('SET', key, claimed, 'NX', 'PXAT', string.format('%.0f', expires))
      elseif after == '0' then
        set = redis.call('SET', key, claimed, 'NX')
      else
        set = redis.call('SET', key, claimed, 'NX', 'PX', after)
      end
      taken[key] = true
      if set then
        job[1] = job[1] + 1
        if recurring and (not job[2] or trigger > job[2]) then
          job[2] = trigger
        end
        changed[state] = true
        results[i] = job[1]
        local register = KEYS[5 * i]
        local entries = registers[register] or {}
        registers[register] = entries
        entries[#entries + 1] = ARGV[6 * i]
        entries[#entries + 1] = string.match(claimant, '^%S+ (.*)$')
      else
        results[i] = 0
      end
    end
  end
end
local writes = {}
for state in pairs(changed) do
  local job = jobs[state]
  writes[#writes + 1] = state
  if job[2] then
    writes[#writes + 1] = string.format('%d %.0f', job[1], job[2])
  else
    writes[#writes + 1] = string.format('%d', job[1])
  end
end
if #writes > 0 then
  redis.call('MSET', unpack(writes))
end
for register, entries in pairs(registers) do
  redis.call('HSET', register, unpack(entries))
end
return results
