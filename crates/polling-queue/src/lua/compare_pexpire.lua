-- Renew a lock or lease only if the caller still owns it.
-- KEYS[1]  the lock key
-- ARGV[1]  the caller's token
-- ARGV[2]  new TTL in milliseconds
-- Returns 1 when renewed, 0 when the key is gone or owned by someone else.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
