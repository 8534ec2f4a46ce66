-- Cluster-wide counting semaphore. "Now" is the Redis server's clock (TIME), so a node whose
-- clock runs ahead cannot expire the holders of the others.
-- KEYS[1]  holders (zset: token -> lease expiry, unix seconds)
-- ARGV[1]  lease, whole milliseconds
-- ARGV[2]  max holders
-- ARGV[3..] tokens, in the order they are served
-- Returns how many of the tokens, from the first, now hold a slot (0 when the semaphore is full).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local room = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local n = math.min(room, #ARGV - 2)
if n <= 0 then
  return 0
end
local expiry = now + tonumber(ARGV[1]) / 1000
local entries = {}
for i = 1, n do
  entries[2 * i - 1] = expiry
  entries[2 * i] = ARGV[2 + i]
end
redis.call('ZADD', KEYS[1], unpack(entries))
return n
