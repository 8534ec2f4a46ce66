-- Pops the due entries of a decisive lane (zset: card id -> the time its poll is due, unix
-- seconds). "Now" is the Redis server's clock (TIME), as in dequeue.lua.
-- KEYS[1]  the lane
-- ARGV[1]  at most this many
-- Returns {due, wait}: the due members, earliest first, removed from the lane; and the
-- milliseconds until the earliest pick left is due (0 when more are due than were taken; -1
-- when the lane is empty). The lane only points at cards: the caller leases each in its shard
-- queue (claim_due.lua), where an entry that is no longer due, is in flight or is gone is not
-- taken, so a stale pick costs nothing but itself.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local chunk = 1000 -- unpack() fails near 8,000 values
for i = 1, #due, chunk do
  redis.call('ZREM', KEYS[1], unpack(due, i, math.min(i + chunk - 1, #due)))
end
if #due >= tonumber(ARGV[1]) then
  return {due, 0}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = -1
if first[2] then
  wait = math.max(0, math.floor((tonumber(first[2]) - now) * 1000))
end
return {due, wait}
