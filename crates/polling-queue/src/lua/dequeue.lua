-- Lease-based dequeue of one shard queue. "Now" is the Redis server's clock (TIME), so nodes
-- whose clocks disagree still agree on what is due and when a lease ends.
-- KEYS[1]  the shard queue (zset: card id -> next check, unix seconds)
-- ARGV[1]  batch: at most this many members
-- ARGV[2]  lease, whole milliseconds
-- Returns the due members (score <= now), oldest first. Each is re-scored to a lease score: the
-- deadline (now + lease, whole milliseconds) plus 0.5 ms plus i microseconds (i < 500; each
-- further 500 members one more millisecond). So the scores are strictly increasing (they insert
-- faster than equal ones), and a lease score is recognisable: its microseconds modulo 1000 are
-- 500..999, while a scheduled time is a whole millisecond. The card stays queued but invisible
-- until the lease ends: a worker that dies loses nothing, and a manual trigger can tell a card
-- in flight from a card waiting (claim.lua).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n = #due
local deadline = (now_ms + tonumber(ARGV[2])) / 1000
local chunk = 1000 -- unpack() fails near 8,000 values
local i = 1
while i <= n do
  local last = math.min(i + chunk - 1, n)
  local args = {}
  for j = i, last do
    local k = j - 1
    args[#args + 1] = deadline + math.floor(k / 500) * 0.001 + 0.0005 + (k % 500) * 0.000001
    args[#args + 1] = due[j]
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  i = last + 1
end
return due
