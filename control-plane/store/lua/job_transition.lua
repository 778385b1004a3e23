-- job_transition.lua: the one script that changes a training job document.
-- KEYS[1] ty:job:<name> (hash: top-level member -> JSON text of its value)
-- ARGV[1] expected TrainingJobStatus values, comma-separated ('' = any)
-- ARGV[2] expected SecondaryStatus values, comma-separated ('' = any)
-- ARGV[3] new TrainingJobStatus ('' = keep)
-- ARGV[4] new SecondaryStatus ('' = keep)
-- ARGV[5] the appended transition as JSON text, without EndTime (used when the secondary
--         status changes; when it stays, its StatusMessage replaces the open transition's)
-- ARGV[6] now as a number (EndTime of the previous transition)
-- ARGV[7] now as JSON text (LastModifiedTime)
-- ARGV[8] the status-set prefix ty:idx:job:status: (a set of names per TrainingJobStatus)
-- ARGV[9] the job name
-- ARGV[10..] member, json pairs to write; an empty json removes the member
-- Returns HGETALL of the new document, or the errors "NOTFOUND no such job" or
-- "CONFLICT <current TrainingJobStatus>".
-- Only SecondaryStatusTransitions is decoded (its entries hold strings and ms timestamps,
-- which cjson keeps exactly); every other member is stored as opaque JSON text.
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 then
    return redis.error_reply('NOTFOUND no such job')
end

local function dec(s)
    if not s then
        return nil
    end
    local ok, v = pcall(cjson.decode, s)
    if ok and type(v) == 'string' then
        return v
    end
    return nil
end

local function member_of(list, v)
    for item in string.gmatch(list, '[^,]+') do
        if item == v then
            return true
        end
    end
    return false
end

local cur = dec(redis.call('HGET', key, 'TrainingJobStatus')) or ''
local cur2 = dec(redis.call('HGET', key, 'SecondaryStatus')) or ''
if ARGV[1] ~= '' and not member_of(ARGV[1], cur) then
    return redis.error_reply('CONFLICT ' .. cur)
end
if ARGV[2] ~= '' and not member_of(ARGV[2], cur2) then
    return redis.error_reply('CONFLICT ' .. cur)
end

if ARGV[3] ~= '' and ARGV[3] ~= cur then
    redis.call('HSET', key, 'TrainingJobStatus', cjson.encode(ARGV[3]))
    redis.call('SREM', ARGV[8] .. cur, ARGV[9])
    redis.call('SADD', ARGV[8] .. ARGV[3], ARGV[9])
    if ARGV[3] == 'Completed' or ARGV[3] == 'Failed' or ARGV[3] == 'Stopped' then
        -- an ended job holds nothing: fair share stops counting it (queue.lua)
        redis.call('HDEL', 'ty:share:held', ARGV[9])
    end
end
if ARGV[4] ~= '' and ARGV[4] ~= cur2 then
    redis.call('HSET', key, 'SecondaryStatus', cjson.encode(ARGV[4]))
    local text = redis.call('HGET', key, 'SecondaryStatusTransitions')
    local list = {}
    if text then
        local ok, v = pcall(cjson.decode, text)
        if ok and type(v) == 'table' then
            list = v
        end
    end
    local n = #list
    if n == 0 then
        text = '[' .. ARGV[5] .. ']'
    else
        if type(list[n]) == 'table' and list[n]['EndTime'] == nil then
            list[n]['EndTime'] = tonumber(ARGV[6])
        end
        local enc = cjson.encode(list)
        text = string.sub(enc, 1, -2) .. ',' .. ARGV[5] .. ']'
    end
    redis.call('HSET', key, 'SecondaryStatusTransitions', text)
elseif ARGV[4] ~= '' then
    -- the same secondary status with another message (a queued job's reason to wait, then
    -- "Preparing the instances for training" once an agent took it): the open transition says
    -- the new one, as SageMaker restates a status it stays in
    local text = redis.call('HGET', key, 'SecondaryStatusTransitions')
    local okl, list = pcall(cjson.decode, text or '')
    local okt, tr = pcall(cjson.decode, ARGV[5])
    if okl and okt and type(list) == 'table' and type(tr) == 'table' and #list > 0 then
        local last = list[#list]
        if type(last) == 'table' and last['Status'] == ARGV[4] and last['EndTime'] == nil and
            type(tr['StatusMessage']) == 'string' and last['StatusMessage'] ~= tr['StatusMessage'] then
            last['StatusMessage'] = tr['StatusMessage']
            redis.call('HSET', key, 'SecondaryStatusTransitions', cjson.encode(list))
        end
    end
end

local i = 10
while i < #ARGV do
    if ARGV[i + 1] == '' then
        redis.call('HDEL', key, ARGV[i])
    else
        redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    end
    i = i + 2
end
redis.call('HSET', key, 'LastModifiedTime', ARGV[7])
return redis.call('HGETALL', key)
