-- Where a replica's reader of a topic starts: strata-redis's RedisBroadcaster.
-- KEYS[1]: the topic's stream; KEYS[2]: its epoch (one hash tag: one slot).
-- Answers {epoch or '', the stream's last entry id or '0-0'}, read at one instant.
local epoch = redis.call('GET', KEYS[2]) or ''
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local id = '0-0'
if #last > 0 then
    id = last[1][1]
end
return {epoch, id}
