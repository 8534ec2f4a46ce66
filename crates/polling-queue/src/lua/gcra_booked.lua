-- How far ahead a GCRA bucket (gcra.lua) is booked, by the Redis server's clock. Read-only.
-- KEYS[1]  the bucket: "<tat>" or "<tat> <f0> <t0>" (gcra.lua), TAT in microseconds since the
--          epoch
-- Returns TAT - now in microseconds, 0 when the bucket is idle or absent.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local raw = redis.call('GET', KEYS[1]) or '0'
local tat = tonumber(string.match(raw, '^(%d+)') or '0')
if tat <= now then
  return 0
end
return math.floor(tat - now)
