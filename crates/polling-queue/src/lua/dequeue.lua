-- Lease-based dequeue of one shard queue.
-- KEYS[1]  the shard queue (zset: card id -> next check, unix seconds)
-- ARGV[1]  now (unix seconds, fractional)
-- ARGV[2]  batch: at most this many members
-- ARGV[3]  lease deadline (now + lease), whole milliseconds
-- Returns the due members, oldest first. Each is re-scored to a lease score: the deadline plus
-- 0.5 ms plus i microseconds (i < 500; each further 500 members one more millisecond). So the
-- scores are strictly increasing (they insert faster than equal ones), and a lease score is
-- recognisable: its microseconds modulo 1000 are 500..999, while a scheduled time is a whole
-- millisecond. The card stays queued but invisible until the lease ends: a worker that dies
-- loses nothing, and a manual trigger can tell a card in flight from a card waiting (claim.lua).
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local n = #due
local deadline = tonumber(ARGV[3])
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
