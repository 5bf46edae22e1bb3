-- The per-job lease of slotcron's overlap policies; Redis runs the script atomically.
--
-- KEYS[1]  the job's lease key
-- ARGV[1]  the operation: acquire, renew, release or cancel
-- ARGV[2]  the owner (acquire, renew, release): "{token} {instance} {trigger key}"
-- ARGV[3]  the TTL in milliseconds (acquire, renew)
--
-- The key holds the owner, or "!" and the owner once a replace asked its run to stop.
-- Owners never start with "!". Every change compares the stored owner first, so a
-- lease that expired and was taken by another owner is never renewed or released by
-- the first (no blind PEXPIRE, no blind DEL).
local held = redis.call('GET', KEYS[1])
local op, owner = ARGV[1], ARGV[2]
local mine = held == owner or held == ('!' .. (owner or ''))
if op == 'acquire' then
  if not held then
    redis.call('SET', KEYS[1], owner, 'PX', ARGV[3])
    return 1
  end
  if mine then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
  end
  return 0
elseif op == 'renew' then
  if not mine then
    return 0
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if held == owner then return 1 end
  return 2
elseif op == 'release' then
  if mine then
    redis.call('DEL', KEYS[1])
  end
  return 0
elseif op == 'cancel' then
  if not held then
    return 0
  end
  if string.sub(held, 1, 1) ~= '!' then
    redis.call('SET', KEYS[1], '!' .. held, 'KEEPTTL')
  end
  return 1
end
return redis.error_reply('unknown lease operation ' .. tostring(op))
