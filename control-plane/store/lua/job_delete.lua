-- job_delete.lua: deletes a training job when its status is one of the expected ones.
-- KEYS[1] ty:job:<name>  KEYS[2] ty:idx:job
-- ARGV[1] name  ARGV[2] expected TrainingJobStatus values, comma-separated ('' = any)
-- ARGV[3] tags key prefix ('ty:tags:'); the job's tags live under prefix .. TrainingJobArn
-- ARGV[4] the status-set prefix ty:idx:job:status: (a set of names per TrainingJobStatus)
-- Returns 1, or the errors "NOTFOUND no such job" / "CONFLICT <status>".
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

local cur = dec(redis.call('HGET', key, 'TrainingJobStatus')) or ''
if ARGV[2] ~= '' then
    local found = false
    for item in string.gmatch(ARGV[2], '[^,]+') do
        if item == cur then
            found = true
        end
    end
    if not found then
        return redis.error_reply('CONFLICT ' .. cur)
    end
end
local arn = dec(redis.call('HGET', key, 'TrainingJobArn'))
redis.call('DEL', key)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', ARGV[4] .. cur, ARGV[1])
redis.call('HDEL', 'ty:share:held', ARGV[1])
if arn and arn ~= '' then
    redis.call('DEL', ARGV[3] .. arn)
end
return 1
