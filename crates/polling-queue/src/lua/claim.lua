-- Claims cards of one shard queue for a manual trigger, so that one card and type is never
-- polled twice at once anywhere (the dequeue of another node, or another manual trigger).
-- "Now" is the Redis server's clock (TIME), as in dequeue.lua.
-- KEYS[1]  the shard queue
-- ARGV[1]  lease, whole milliseconds
-- ARGV[2..] card ids
-- Returns one code per card: 1 claimed (now leased, poll it), 0 in flight elsewhere (a lease
-- score that has not ended: skip, that poll covers the trigger), 2 not queued (poll it: the
-- handler's ZADD XX will not add it back).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = (now_ms + tonumber(ARGV[1])) / 1000
local codes = {}
local k = 0
for i = 2, #ARGV do
  local member = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], member)
  if not score then
    codes[#codes + 1] = 2
  else
    score = tonumber(score)
    local leased = math.floor(score * 1000000 + 0.5) % 1000 >= 500
    if leased and score > now then
      codes[#codes + 1] = 0
    else
      redis.call('ZADD', KEYS[1], deadline + math.floor(k / 500) * 0.001 + 0.0005 + (k % 500) * 0.000001, member)
      k = k + 1
      codes[#codes + 1] = 1
    end
  end
end
return codes
