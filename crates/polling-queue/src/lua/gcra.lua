-- GCRA (generic cell rate algorithm) reservation, shared by every node.
-- KEYS[1]  the bucket: theoretical arrival time (TAT), microseconds since the epoch
-- ARGV[1]  emission interval T in microseconds (1e6 / per_second)
-- ARGV[2]  burst tolerance in microseconds (how far the TAT may run ahead of now): 0 for
--          queries, so that the allowance is left to stop/start calls, which never wait behind
--          the queries already booked (the client passes the caller's class)
-- ARGV[3]  max wait in microseconds
-- Returns the wait in microseconds before the reserved call may go, or -1 when that wait would
-- exceed the max wait (nothing reserved). Time is Redis TIME, so nodes' clocks need not agree.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local wait = tat - tolerance - now
if wait < 0 then
  wait = 0
end
if wait > tonumber(ARGV[3]) then
  return -1
end
local new_tat = tat + interval
local ttl_ms = math.ceil((new_tat - now) / 1000) + 1000
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl_ms)
return math.floor(wait)
