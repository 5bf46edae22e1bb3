-- Claims a run an operator asked for (manual, backfill, caught up at a resume) under a
-- key of its own; Redis runs the script atomically. No pause and no high-water mark
-- apply.
--
-- KEYS[1]  the run's key
-- KEYS[2]  the job's fencing counter
-- ARGV[1]  the claimant: "{token} {instance}"
-- ARGV[2]  how long the claim holds, in ms
--
-- Returns the new fencing token when won, 0 when the key is held (lost). The key's
-- value is "{fencing token} {claimant}", as a trigger claim's, so a claimant whose reply
-- was lost reads it back the same way.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local fencing = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], string.format('%d %s', fencing, ARGV[1]), 'PX', ARGV[2])
return fencing
