-- Leases the cards a decisive lane picked in one shard queue, as a dequeue would, but only
-- those whose entry is due by the Redis server's clock: a scheduled time not after now, or a
-- lease that has ended (its node died). A card rescheduled later since the pick, in flight
-- elsewhere, or no longer queued is left alone: a pick never polls a card before its time.
-- KEYS[1]  the shard queue
-- ARGV[1]  lease, whole milliseconds
-- ARGV[2..] card ids
-- Returns one code per card: 1 leased (poll it), 0 not taken.
-- The lease scores follow dequeue.lua: deadline + 0.5 ms + i microseconds (i < 500, each further
-- 500 cards one more millisecond), so a lease is recognisable (microseconds 500..999).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = (now_ms + tonumber(ARGV[1])) / 1000
local codes = {}
local k = 0
for i = 2, #ARGV do
  local member = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], member)
  if score and tonumber(score) <= now then
    redis.call('ZADD', KEYS[1], deadline + math.floor(k / 500) * 0.001 + 0.0005 + (k % 500) * 0.000001, member)
    k = k + 1
    codes[#codes + 1] = 1
  else
    codes[#codes + 1] = 0
  end
end
return codes
