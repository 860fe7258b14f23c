-- Publishes an event to a topic's stream: strata-redis's RedisBroadcaster, one call per event.
-- KEYS[1]: the topic's stream; KEYS[2]: the epoch (the id of this Redis's data set).
-- ARGV[1]: the most events kept; ARGV[2]: the longest they are kept, ms (0: no limit);
-- ARGV[3]: an epoch to set when there is none; ARGV[4]: the event's name; ARGV[5]: its data.
-- Answers {epoch, entry id}.
redis.call('SET', KEYS[2], ARGV[3], 'NX')
local epoch = redis.call('GET', KEYS[2])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '=', ARGV[1], '*',
    'e', epoch, 'n', ARGV[4], 'd', ARGV[5])
local max_age = tonumber(ARGV[2])
if max_age > 0 then
    -- The server's clock, as the entry ids: entries older than max_age go, and the stream
    -- itself once max_age has passed without an event.
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    redis.call('XTRIM', KEYS[1], 'MINID', string.format('%d', now - max_age))
    redis.call('PEXPIRE', KEYS[1], max_age)
end
return {epoch, id}
