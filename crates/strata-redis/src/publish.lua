-- Publishes an event to a topic's stream: strata-redis's RedisBroadcaster, one call per event.
-- KEYS[1]: the topic's stream; KEYS[2]: the topic's epoch (the id of this data set's copy of
-- the topic); KEYS[3]: this call's token (random, one per publication). All carry the topic as
-- their hash tag: one slot on a Redis Cluster.
-- ARGV[1]: the most events kept; ARGV[2]: the longest they are kept, ms (0: no limit);
-- ARGV[3]: an epoch to set when there is none; ARGV[4]: the event's name; ARGV[5]: its data;
-- ARGV[6]: the deadline, ms since the Unix epoch on this server's clock ('' for none).
-- Answers {epoch, entry id, the server's time in ms}.
--
-- The deadline is what makes a failed publication never happen: the caller gives up after its
-- timeout and reports a failure, but its call may still sit in the socket of a Redis that is
-- stalled (SIGSTOP, a slow command, a full disk) and run when Redis wakes, seconds later. Run
-- after the deadline, the script refuses and changes nothing. The token makes the same call run
-- twice (a client library's retry after a lost answer) publish once: it answers the same id.

-- Redis before 5 replicates a script by its text, which TIME makes non-deterministic; later
-- versions replicate its effects and keep this call as a no-op.
if redis.replicate_commands then
    redis.replicate_commands()
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local done = redis.call('GET', KEYS[3])
if done then
    local epoch, id = string.match(done, '^(%S+) (%S+)$')
    -- Kept until a run of this call would be refused anyway (its deadline), and a second more.
local keep = 60000
if ARGV[6] ~= '' then
    keep = math.max(tonumber(ARGV[6]) - now, 0) + 1000
end
redis.call('SET', KEYS[3], epoch .. ' ' .. id, 'PX', string.format('%d', keep))
return {epoch, id, string.format('%d', now)}
end
if ARGV[6] ~= '' and now > tonumber(ARGV[6]) then
    return redis.error_reply('STRATA_LATE the publication ran after its deadline: not published')
end
redis.call('SET', KEYS[2], ARGV[3], 'NX')
local epoch = redis.call('GET', KEYS[2])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '=', ARGV[1], '*',
    'e', epoch, 'n', ARGV[4], 'd', ARGV[5])
local max_age = tonumber(ARGV[2])
if max_age > 0 then
    -- The server's clock, as the entry ids: entries older than max_age go, and the stream
    -- itself (with its epoch) once max_age has passed without an event.
    redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d', now - max_age))
    redis.call('PEXPIRE', KEYS[1], max_age)
    redis.call('PEXPIRE', KEYS[2], max_age)
end
-- Kept until a run of this call would be refused anyway (its deadline), and a second more.
local keep = 60000
if ARGV[6] ~= '' then
    keep = math.max(tonumber(ARGV[6]) - now, 0) + 1000
end
redis.call('SET', KEYS[3], epoch .. ' ' .. id, 'PX', string.format('%d', keep))
return {epoch, id, string.format('%d', now)}
