-- Lease-based dequeue of one shard queue. "Now" is the Redis server's clock (TIME), so nodes
-- whose clocks disagree still agree on what is due and when a lease ends.
-- KEYS[1]  the shard queue (zset: card id -> next check, unix seconds)
-- ARGV[1]  batch: at most this many members
-- ARGV[2]  lease, whole milliseconds
-- Returns {due, wait}: the due members (score <= now), oldest first, and the milliseconds until
-- the earliest entry left is due by this clock (a waiting card or a lease; 0 when more are due
-- than the batch took; -1 when the queue is empty), so that an idle loop can sleep until then.
-- Each due member is re-scored to a lease score: the
-- deadline (now + lease, whole milliseconds) plus 0.5 ms plus i microseconds (i < 500; each
-- further 500 members one more millisecond). So the scores are strictly increasing (they insert
-- faster than equal ones), and a lease score is recognisable: its microseconds modulo 1000 are
-- 500..999, while a scheduled time is a whole millisecond. The card stays queued but invisible
-- until the lease ends: a worker that dies loses nothing, and a manual trigger can tell a card
-- in flight from a card waiting (claim.lua).
--
-- The scores are passed to ZADD as decimal text, "<seconds>.<milliseconds><500 + i>", built by
-- concatenation: a Lua number handed to redis.call is printed with "%.17g", which cost more than
-- the ZADD itself (callgrind of the server: ~4,100 of ~13,500 instructions a member).
-- MICROS holds "500" .. "999" back to back: the three digits of i are MICROS:sub(3i+1, 3i+3).
local MICROS = '500501502503504505506507508509510511512513514515516517518519520521522523524525526527528529530531532533534535536537538539540541542543544545546547548549550551552553554555556557558559560561562563564565566567568569570571572573574575576577578579580581582583584585586587588589590591592593594595596597598599600601602603604605606607608609610611612613614615616617618619620621622623624625626627628629630631632633634635636637638639640641642643644645646647648649650651652653654655656657658659660661662663664665666667668669670671672673674675676677678679680681682683684685686687688689690691692693694695696697698699700701702703704705706707708709710711712713714715716717718719720721722723724725726727728729730731732733734735736737738739740741742743744745746747748749750751752753754755756757758759760761762763764765766767768769770771772773774775776777778779780781782783784785786787788789790791792793794795796797798799800801802803804805806807808809810811812813814815816817818819820821822823824825826827828829830831832833834835836837838839840841842843844845846847848849850851852853854855856857858859860861862863864865866867868869870871872873874875876877878879880881882883884885886887888889890891892893894895896897898899900901902903904905906907908909910911912913914915916917918919920921922923924925926927928929930931932933934935936937938939940941942943944945946947948949950951952953954955956957958959960961962963964965966967968969970971972973974975976977978979980981982983984985986987988989990991992993994995996997998999'
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n = #due
local deadline_ms = now_ms + tonumber(ARGV[2])
local chunk = 1000 -- unpack() fails near 8,000 values
local sub, format, floor = string.sub, string.format, math.floor
local prefix
local i = 1
while i <= n do
  local last = math.min(i + chunk - 1, n)
  local args = {}
  local a = 0
  for j = i, last do
    local k = j - 1
    local micro = k % 500
    if micro == 0 or j == i then
      -- The millisecond of this run of 500 members, as "<seconds>.<three digits>".
      local ms = deadline_ms + floor(k / 500)
      prefix = format('%d.%03d', floor(ms / 1000), ms % 1000)
    end
    args[a + 1] = prefix .. sub(MICROS, 3 * micro + 1, 3 * micro + 3)
    args[a + 2] = due[j]
    a = a + 2
  end
  redis.call('ZADD', KEYS[1], unpack(args))
  i = last + 1
end
if n >= tonumber(ARGV[1]) then
  return {due, 0}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = -1
if first[2] then
  wait = math.max(0, math.floor((tonumber(first[2]) - now) * 1000))
end
return {due, wait}
