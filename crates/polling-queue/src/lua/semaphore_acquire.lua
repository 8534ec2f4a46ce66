-- Cluster-wide counting semaphore.
-- KEYS[1]  holders (zset: token -> lease expiry, unix seconds)
-- ARGV[1]  now
-- ARGV[2]  this holder's lease expiry
-- ARGV[3]  max holders
-- ARGV[4]  token
-- Returns 1 when the token now holds a slot, 0 when the semaphore is full.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  return 1
end
return 0
