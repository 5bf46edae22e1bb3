-- Sets a key unless it is set, and answers what it held; Redis runs the script
-- atomically (SET NX GET, which needs Redis 7, for Redis 6.2).
--
-- KEYS[1]  the key
-- ARGV[1]  the value
-- ARGV[2]  its TTL in ms, or "" for none
--
-- Returns the value the key held (which stays), or nil when it was set now.
local held = redis.call('GET', KEYS[1])
if held then
  return held
end
if ARGV[2] == '' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return false
