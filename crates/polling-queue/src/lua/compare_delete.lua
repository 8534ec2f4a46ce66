-- Release a lock or lease only if the caller still owns it.
-- KEYS[1]  the lock key
-- ARGV[1]  the caller's token
-- Returns 1 when deleted, 0 when the key is gone or owned by someone else.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
