-- queue.lua: the queue's atomic looks (queue.c). No agent reads with XREADGROUP '>': an agent
-- lists the entries no agent holds, chooses one that fits it (agent/ledger.h), and takes that
-- one; the group's pending list is the one record of who holds what.
-- KEYS[1] ty:queue:training   ARGV[1] the consumer group
-- ARGV[2] 'waiting', ARGV[3] max: {last id ('0-0' when empty), id, job, id, job, ...}, the
--   entries in no consumer's pending list, oldest first, at most max of them
-- ARGV[2] 'take', ARGV[3] consumer, ARGV[4] entry id: 1 when the entry exists and nobody held
--   it (it is now the consumer's, idle 0), 0 when it is gone or held
-- A missing group is answered with Redis's own NOGROUP error (queue.c creates it and retries).
local stream, group = KEYS[1], ARGV[1]
if ARGV[2] == 'take' then
    if #redis.call('XRANGE', stream, ARGV[4], ARGV[4]) == 0 then
        return 0
    end
    local held = redis.pcall('XPENDING', stream, group, ARGV[4], ARGV[4], 1)
    if held.err then
        return held
    end
    if #held > 0 then
        return 0
    end
    redis.call('XCLAIM', stream, group, ARGV[3], 0, ARGV[4], 'FORCE', 'JUSTID')
    return 1
end
if ARGV[2] ~= 'waiting' then
    return redis.error_reply('ERR queue.lua: unknown mode')
end
local max = tonumber(ARGV[3])
local sum = redis.pcall('XPENDING', stream, group)
if sum.err then
    return sum
end
local held, nheld = {}, tonumber(sum[1])
if nheld > 0 then
    for _, p in ipairs(redis.call('XPENDING', stream, group, '-', '+', nheld)) do
        held[p[1]] = true
    end
end
local out = {'0-0'}
local top = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
if #top > 0 then
    out[1] = top[1][1]
end
local n = 0
for _, e in ipairs(redis.call('XRANGE', stream, '-', '+', 'COUNT', max + nheld)) do
    if n >= max then
        break
    end
    if not held[e[1]] then
        local job = ''
        for i = 1, #e[2], 2 do
            if e[2][i] == 'job' then
                job = e[2][i + 1]
            end
        end
        out[#out + 1] = e[1]
        out[#out + 1] = job
        n = n + 1
    end
end
return out
