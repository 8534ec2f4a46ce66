-- Cluster-wide counting semaphore. "Now" is the Redis server's clock (TIME), so a node whose
-- clock runs ahead cannot expire the holders of the others.
-- KEYS[1]  holders (zset: token -> lease expiry, unix seconds)
-- ARGV[1]  lease, whole milliseconds
-- ARGV[2]  max holders
-- ARGV[3]  token
-- Returns 1 when the token now holds a slot, 0 when the semaphore is full.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]) / 1000, ARGV[3])
  return 1
end
return 0
