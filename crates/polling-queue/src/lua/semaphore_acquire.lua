-- Cluster-wide counting semaphore.
-- KEYS[1]  holders (zset: token -> lease expiry, unix seconds)
-- ARGV[1]  now
-- ARGV[2]  the new holders' lease expiry
-- ARGV[3]  max holders
-- ARGV[4..] tokens, in the order they are served
-- Returns how many of the tokens, from the first, now hold a slot (0 when the semaphore is full).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local room = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local n = math.min(room, #ARGV - 3)
if n <= 0 then
  return 0
end
local pairs = {}
for i = 1, n do
  pairs[2 * i - 1] = ARGV[2]
  pairs[2 * i] = ARGV[3 + i]
end
redis.call('ZADD', KEYS[1], unpack(pairs))
return n
