-- Counts a failed trigger in its job's streak of failed triggers in a row, and pauses
-- the job when the streak reaches its limit (slotcron::Controls::count_failure).
--
-- KEYS[1]  the job's streak (an integer)
-- KEYS[2]  the job's pause key (the instant it was paused, ms since the Unix epoch)
-- KEYS[3]  the reason kept beside the job's pause
-- ARGV[1]  the limit: the streak that pauses the job
-- ARGV[2]  the instant to pause it at (ms since the Unix epoch)
-- ARGV[3]  the reason
--
-- Returns {the streak, 1 if this call paused the job, else 0}. A job paused already
-- keeps its pause (and has no reason written).
local failures = redis.call('INCR', KEYS[1])
if failures >= tonumber(ARGV[1]) and redis.call('SET', KEYS[2], ARGV[2], 'NX') then
  redis.call('SET', KEYS[3], ARGV[3])
  return {failures, 1}
end
return {failures, 0}
