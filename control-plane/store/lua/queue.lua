-- queue.lua: the queue's atomic looks (queue.c). No agent reads with XREADGROUP '>': an agent
-- lists the entries no agent holds, chooses one that fits it (agent/ledger.h), and takes that
-- one; the group's pending list is the one record of who holds what.
-- KEYS[1] ty:queue:training   KEYS[2] ty:share:held (hash: job -> "<gpus> <cpus> <memory
--   bytes> <principal>", what each running job was charged, by whom it was created)
-- KEYS[3] ty:share:turn (sorted set: principal -> the time in microseconds of its last take;
--   the most recent QUEUE_TURNS are kept)
-- ARGV[1] the consumer group
-- ARGV[2] 'waiting', ARGV[3] max, ARGV[4..6] the live agents' total GPUs, vCPUs and memory
--   bytes: {last id ('0-0' when empty), id, job, principal, id, job, principal, ...}, at most
--   max of the entries in no consumer's pending list (the oldest QUEUE_SCAN of them are
--   looked at), in fair-share order: the principal whose running jobs hold the least dominant
--   share first (Ghodsi et al.'s DRF: the largest of held/total over the three resources; a
--   resource whose total is 0 does not count), then the principal whose last turn (take) is
--   the oldest (never: first), then the oldest entry. All totals 0: oldest entry first.
-- ARGV[2] 'take', ARGV[3] consumer, ARGV[4] entry id, ARGV[5] job, ARGV[6] "<gpus> <cpus>
--   <memory bytes> <principal>": 1 when the entry exists and nobody held it (it is now the
--   consumer's, idle 0, KEYS[2] records what the job holds and KEYS[3] the principal's turn),
--   0 when it is gone or held
-- KEYS[2]'s record of a job is dropped when the job ends (job_transition.lua) or is deleted.
-- A missing group is answered with Redis's own NOGROUP error (queue.c creates it and retries).
local stream, held_key, turn_key, group = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local QUEUE_SCAN, QUEUE_TURNS = 4096, 10000
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
    if ARGV[5] and ARGV[5] ~= '' and ARGV[6] then
        redis.call('HSET', held_key, ARGV[5], ARGV[6])
        local now = redis.call('TIME')
        local who = string.match(ARGV[6], '^%d+ %d+ %d+ ?(.*)$') or ''
        redis.call('ZADD', turn_key, tonumber(now[1]) * 1000000 + tonumber(now[2]), who)
        if redis.call('ZCARD', turn_key) > QUEUE_TURNS then
            redis.call('ZREMRANGEBYRANK', turn_key, 0, -QUEUE_TURNS - 1)
        end
    end
    return 1
end
if ARGV[2] ~= 'waiting' then
    return redis.error_reply('ERR queue.lua: unknown mode')
end
local max = tonumber(ARGV[3])
local total = {tonumber(ARGV[4]) or 0, tonumber(ARGV[5]) or 0, tonumber(ARGV[6]) or 0}
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

-- each principal's dominant share of what the running jobs hold
local fair = total[1] > 0 or total[2] > 0 or total[3] > 0
local share = {}
if fair then
    local sums = {}
    local h = redis.call('HGETALL', held_key)
    for i = 1, #h - 1, 2 do
        local g, c, m, p = string.match(h[i + 1], '^(%d+) (%d+) (%d+) ?(.*)$')
        if g then
            local s = sums[p] or {0, 0, 0}
            s[1], s[2], s[3] = s[1] + tonumber(g), s[2] + tonumber(c), s[3] + tonumber(m)
            sums[p] = s
        end
    end
    for p, s in pairs(sums) do
        local d = 0
        for k = 1, 3 do
            if total[k] > 0 and s[k] / total[k] > d then
                d = s[k] / total[k]
            end
        end
        share[p] = d
    end
end

local list = {}
local scan = fair and QUEUE_SCAN or max
for _, e in ipairs(redis.call('XRANGE', stream, '-', '+', 'COUNT', scan + nheld)) do
    if #list >= scan then
        break
    end
    if not held[e[1]] then
        local job, principal = '', ''
        for i = 1, #e[2], 2 do
            if e[2][i] == 'job' then
                job = e[2][i + 1]
            elseif e[2][i] == 'principal' then
                principal = e[2][i + 1]
            end
        end
        list[#list + 1] = {e[1], job, principal, share[principal] or 0, #list}
    end
end
if fair then
    local turn = {}
    for _, it in ipairs(list) do
        if turn[it[3]] == nil then
            turn[it[3]] = tonumber(redis.call('ZSCORE', turn_key, it[3])) or 0
        end
        it[6] = turn[it[3]]
    end
    table.sort(list, function(a, b)
        if a[4] ~= b[4] then
            return a[4] < b[4]
        end
        if a[6] ~= b[6] then
            return a[6] < b[6]
        end
        return a[5] < b[5]
    end)
end
for i = 1, math.min(max, #list) do
    out[#out + 1] = list[i][1]
    out[#out + 1] = list[i][2]
    out[#out + 1] = list[i][3]
end
return out
