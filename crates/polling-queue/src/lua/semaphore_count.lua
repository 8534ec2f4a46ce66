-- Live holders of a cluster-wide semaphore: those whose lease ends after the Redis server's
-- now (TIME). Read-only.
-- KEYS[1]  holders (zset: token -> lease expiry, unix seconds)
-- Returns the count.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.6f', now), '+inf')
