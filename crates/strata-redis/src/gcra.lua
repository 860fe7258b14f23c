-- Strata's GCRA step (strata_ratelimit::Gcra::decide) for one key, atomically: Redis runs a
-- script alone, so two replicas' requests of one key never both spend its last request.
--
-- KEYS[1]  the key's theoretical arrival time (TAT): whole microseconds, a decimal integer
-- ARGV[1]  the emission interval (µs)
-- ARGV[2]  the capacity, burst × interval (µs)
-- ARGV[3]  now (µs), or "" for the Redis server's own clock (TIME)
--
-- Returns {granted (1 or 0), the stored TAT before this request (-1: none), now}: the caller
-- derives the budget (remaining, reset) from the same two numbers with Gcra::decide itself.
--
-- Lua's numbers are doubles: integers up to 2^53 are exact, and microseconds since the Unix
-- epoch are about 2^50.6, so every sum below is exact while capacity + interval stays under
-- about 200 years. Numbers are written with %d (never %.14g, which would round a TAT).

-- Redis before 5 replicates a script by its text, which TIME makes non-deterministic; later
-- versions replicate its effects (the SET below) and keep this call as a no-op.
if redis.replicate_commands then
    redis.replicate_commands()
end

local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000000 + tonumber(time[2])
else
    now = tonumber(ARGV[3])
end

-- Beyond 2^53 µs the sums below would round: refused rather than decided wrong (only a
-- quota over about 200 years, or a caller's clock that is not the wall clock's, gets here).
if now + capacity + interval >= 9007199254740992 then
    return redis.error_reply('strata GCRA: times beyond 2^53 microseconds')
end

local stored = redis.call('GET', KEYS[1])
local before = -1
-- A TAT in the past is a client that owes nothing: as good as a new one.
local tat = now
if stored then
    before = tonumber(stored)
    if before > now then
        tat = before
    end
end

local new_tat = tat + interval
local debt = new_tat - now
if debt > capacity then
    -- Denied: nothing changes.
    return {0, before, now}
end
-- Granted: the new TAT, kept until it is past (then the client owes nothing and the key may
-- go), rounded up to the millisecond, and a second more: keeping a past TAT changes no decision
-- (it counts as now), and the margin covers a caller's clock (ARGV[3]) that is not quite
-- Redis's.
redis.call('SET', KEYS[1], string.format('%d', new_tat),
    'PX', string.format('%d', math.ceil(debt / 1000) + 1000))
return {1, before, now}
