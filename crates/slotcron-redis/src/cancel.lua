-- Keeps a request to cancel a run, or reads the requests kept, on the server's clock;
-- expired requests are dropped as it goes.
--
-- KEYS[1]  the sorted set of requests (member `{job}:{trigger ms}:{reason}`, score its
--          expiry in ms since the Unix epoch)
-- ARGV[1]  the member to add, or "" to read
-- ARGV[2]  its TTL in ms (when adding)
--
-- Returns the requests not expired (when reading), else 1.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if ARGV[1] == '' then
  return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
-- A request for the same run replaces the one before.
local run = string.match(ARGV[1], '^[^:]*:[^:]*:')
for _, held in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(held, 1, #run) == run then
    redis.call('ZREM', KEYS[1], held)
  end
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
