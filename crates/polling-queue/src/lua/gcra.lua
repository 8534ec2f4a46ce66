-- GCRA (generic cell rate algorithm) reservation, shared by every node.
-- KEYS[1]  the bucket: "<tat>" or "<tat> <f0> <t0>". TAT: theoretical arrival time,
--          microseconds since the epoch. f0, t0: the carrier throttled us at t0 and the rate
--          was cut to f0 of itself (gcra_throttled.lua); the factor grows back linearly to 1
--          over ARGV[4] microseconds.
-- ARGV[1]  emission interval T in microseconds (1e6 / per_second, the margin applied)
-- ARGV[2]  burst tolerance in microseconds (how far the TAT may run ahead of now): 0 for
--          queries, so that the allowance is left to stop/start calls, which never wait behind
--          the queries already booked (the client passes the caller's class)
-- ARGV[3]  max wait in microseconds
-- ARGV[4]  recovery in microseconds: how long a cut rate takes to come back whole
-- Returns the wait in microseconds before the reserved call may go, or -1 when that wait would
-- exceed the max wait (nothing reserved). Time is Redis TIME, so nodes' clocks need not agree.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local recovery = tonumber(ARGV[4])
local raw = redis.call('GET', KEYS[1]) or '0'
local tat, f0, t0 = string.match(raw, '^(%d+) ([%d%.]+) (%d+)$')
if tat then
  tat, f0, t0 = tonumber(tat), tonumber(f0), tonumber(t0)
else
  tat = tonumber(raw) or 0
end
if f0 then
  local factor = f0 + (1 - f0) * (now - t0) / recovery
  if factor >= 1 then
    f0 = nil
  else
    interval = interval / factor
  end
end
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
local value = string.format('%.0f', new_tat)
local ttl_ms = math.ceil((new_tat - now) / 1000) + 1000
if f0 then
  value = value .. ' ' .. string.format('%.4f', f0) .. ' ' .. string.format('%.0f', t0)
  ttl_ms = math.max(ttl_ms, math.ceil((t0 + recovery - now) / 1000) + 1000)
end
redis.call('SET', KEYS[1], value, 'PX', ttl_ms)
return math.floor(wait)
