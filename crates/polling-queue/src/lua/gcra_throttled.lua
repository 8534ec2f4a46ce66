-- The carrier refused a call as over its limit: cut the bucket's rate (gcra.lua) and pause it.
-- KEYS[1]  the bucket: "<tat>" or "<tat> <f0> <t0>" (gcra.lua)
-- ARGV[1]  pause in microseconds: no call goes before now + pause (the carrier's Retry-After)
-- ARGV[2]  cut: the rate in force is multiplied by this (e.g. 0.7)
-- ARGV[3]  floor: the rate is never cut below this share of the configured one
-- ARGV[4]  recovery in microseconds (as gcra.lua's ARGV[4])
-- ARGV[5]  microseconds after a cut during which another refusal cuts nothing more: the calls
--          already under way when the carrier first refused are refused for the same excess
-- Returns the share of the configured rate now in force, in thousandths.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local recovery = tonumber(ARGV[4])
local raw = redis.call('GET', KEYS[1]) or '0'
local tat, f0, t0 = string.match(raw, '^(%d+) ([%d%.]+) (%d+)$')
if tat then
  tat, f0, t0 = tonumber(tat), tonumber(f0), tonumber(t0)
else
  tat = tonumber(raw) or 0
end
local factor = 1
if f0 then
  factor = math.min(1, f0 + (1 - f0) * (now - t0) / recovery)
end
if not (f0 and now - t0 < tonumber(ARGV[5])) then
  factor = math.max(factor * tonumber(ARGV[2]), tonumber(ARGV[3]))
  t0 = now
end
tat = math.max(tat, now + tonumber(ARGV[1]))
local value = string.format('%.0f', tat) .. ' ' .. string.format('%.4f', factor) .. ' '
  .. string.format('%.0f', t0)
local ttl_ms = math.ceil((math.max(tat, t0 + recovery) - now) / 1000) + 1000
redis.call('SET', KEYS[1], value, 'PX', ttl_ms)
return math.floor(factor * 1000)
