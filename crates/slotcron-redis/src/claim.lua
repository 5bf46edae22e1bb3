-- Claims one slotcron trigger; Redis runs the script atomically.
--
-- KEYS[1]  the trigger key
-- KEYS[2]  the job's fencing counter
-- ARGV[1]  the claimant: "{token} {instance}"
-- ARGV[2]  how long the claim holds, in milliseconds; "0" for ever
--
-- Set-if-absent: when the trigger key exists the claim is lost (nil). Otherwise the
-- fencing counter grows and the key is set to "{fencing token} {claimant}", so a
-- claimant whose reply was lost can read back whether it won and which token it got.
-- The counter grows before the key is set: if INCR fails (the counter was overwritten
-- with a non-number), no claim is left behind.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end
local fencing = redis.call('INCR', KEYS[2])
local value = string.format('%d %s', fencing, ARGV[1])
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], value)
else
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
end
return fencing
