-- Claims one slotcron trigger; Redis runs the script atomically.
--
-- KEYS[1]  the trigger key
-- KEYS[2]  the job's fencing counter
-- KEYS[3]  the job's high-water mark: the newest recurring trigger granted, in ms
-- KEYS[4]  the job's pause: present while the job is paused
-- ARGV[1]  the claimant: "{token} {instance}"
-- ARGV[2]  the trigger, in milliseconds since the Unix epoch
-- ARGV[3]  recurring: how long after its trigger the claim holds at least, in ms
--          (max(slot, run budget) + slack); "" for a one-shot
-- ARGV[4]  recurring: how long after the claim it holds at least (slot + slack), in ms;
--          one-shot: how long it is retained, in ms, "0" for ever
--
-- Returns the new fencing token when won, 0 when the trigger key is held (lost), -2
-- when the job is paused (nothing written), -1 when the high-water mark refuses the
-- trigger: it is at or before the mark and at
-- least ARGV[3] old on the server's clock (TIME), so its claim may have expired. A won
-- recurring claim expires at the later of trigger + ARGV[3] and now + ARGV[4] (PEXPIREAT,
-- the server's clock) and moves the mark up to its trigger. The key's value is
-- "{fencing token} {claimant}", so a claimant whose reply was lost can read back whether
-- it won and which token it got. The counter grows before the key is set: if INCR fails
-- (the counter was overwritten with a non-number), no claim is left behind.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return -2
end
local recurring = ARGV[3] ~= ''
local trigger = tonumber(ARGV[2])
local expires, mark
if recurring then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local after_trigger = tonumber(ARGV[3])
  mark = tonumber(redis.call('GET', KEYS[3]) or '')
  if mark and trigger <= mark and now >= trigger + after_trigger then
    return -1
  end
  expires = math.max(trigger + after_trigger, now + tonumber(ARGV[4]))
end
local fencing = redis.call('INCR', KEYS[2])
local value = string.format('%d %s', fencing, ARGV[1])
if recurring then
  redis.call('SET', KEYS[1], value, 'PXAT', string.format('%.0f', expires))
  if not mark or trigger > mark then
    redis.call('SET', KEYS[3], ARGV[2])
  end
elseif ARGV[4] == '0' then
  redis.call('SET', KEYS[1], value)
else
  redis.call('SET', KEYS[1], value, 'PX', ARGV[4])
end
return fencing
