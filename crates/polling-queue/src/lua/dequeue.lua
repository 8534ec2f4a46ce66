-- Lease-based dequeue of one shard queue.
-- KEYS[1]  the shard queue (zset: card id -> next check, unix seconds)
-- ARGV[1]  now (unix seconds, fractional)
-- ARGV[2]  batch: at most this many members
-- ARGV[3]  lease deadline (now + lease)
-- Returns the due members, oldest first. Each is re-scored to deadline + i * 1e-6 (strictly
-- increasing scores insert faster than equal ones), so it stays queued but invisible until the
-- lease ends: a worker that dies loses nothing.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local n = #due
local deadline = tonumber(ARGV[3])
local chunk = 1000 -- unpack() fails near 8,000 values
local i = 1
while i <= n do
  local last = math.min(i + chunk - 1, n)
  local args = {}
  for j = i, last do
    args[#args + 1] = deadline + (j - 1) * 0.000001
    args[#args + 1] = due[j]
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  i = last + 1
end
return due
