-- Renews one member of a slotcron fleet and returns the live members; atomic.
--
-- KEYS[1]  the membership: a sorted set of instance ids scored by when each lapses,
--          in milliseconds since the Unix epoch on the server's clock (TIME)
-- ARGV[1]  the instance
-- ARGV[2]  the membership TTL, in ms
--
-- Removes the lapsed members, sets this one to lapse ARGV[2] from now and returns the
-- members, sorted by id. The set has no expiry of its own: it holds at most one entry
-- per instance, and lapsed ones go at the next heartbeat.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
return members
