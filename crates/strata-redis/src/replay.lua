-- The events a subscriber resuming after an id is owed: strata-redis's RedisBroadcaster.
-- KEYS[1]: the topic's stream; KEYS[2]: its epoch (one hash tag: one slot).
-- ARGV[1]: the subscriber's epoch; ARGV[2]: its last entry id; ARGV[3]: the most to answer.
-- Answers {epoch or '', 1 when events after the id may be gone else 0, the stream's last id
-- or '0-0', the entries after the id (all those kept when 1)}.
-- Trimming removes the oldest entries first, so while the id's own entry is kept every entry
-- after it is: no gap. When it is not (trimmed, of another epoch, never ours), some may be
-- gone: a gap (at worst a client told of a gap that its last event's trimming alone made).
local function parse(id)
    local ms, seq = string.match(id, '^(%d+)-(%d+)$')
    return tonumber(ms), tonumber(seq)
end
local epoch = redis.call('GET', KEYS[2]) or ''
local head = '0-0'
if redis.call('EXISTS', KEYS[1]) == 1 then
    local info = redis.call('XINFO', 'STREAM', KEYS[1])
    for i = 1, #info, 2 do
        if info[i] == 'last-generated-id' then
            head = info[i + 1]
        end
    end
end
local after = ARGV[2]
local gap = epoch == '' or epoch ~= ARGV[1] or parse(after) == nil
    or #redis.call('XRANGE', KEYS[1], after, after) == 0
local entries
if gap then
    entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[3])
else
    entries = redis.call('XRANGE', KEYS[1], '(' .. after, '+', 'COUNT', ARGV[3])
end
return {epoch, gap and 1 or 0, head, entries}
