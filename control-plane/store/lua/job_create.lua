-- job_create.lua: creates a training job and enqueues it, atomically.
-- KEYS[1] ty:job:<name> (hash: top-level member -> JSON text of its value)
-- KEYS[2] ty:idx:job    KEYS[3] ty:queue:training
-- KEYS[4] ty:idx:job:status:<TrainingJobStatus> (set of the names in that status)
-- ARGV[1] name  ARGV[2] creation score  ARGV[3..] member, json pairs
-- The queue entry carries `job` (the name) and `principal` (the member _principal: who created
-- the job, which fair share orders the waiting jobs by; '' when the document has none).
-- Returns the queue entry id, or the error "INUSE <TrainingJobArn>".
if redis.call('EXISTS', KEYS[1]) == 1 then
    local arn = redis.call('HGET', KEYS[1], 'TrainingJobArn')
    if arn then
        local ok, v = pcall(cjson.decode, arn)
        if ok and type(v) == 'string' then
            arn = v
        end
    else
        arn = ''
    end
    return redis.error_reply('INUSE ' .. arn)
end
if #ARGV < 4 then
    return redis.error_reply('ERR job_create: empty document')
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
local principal = ''
for i = 3, #ARGV - 1, 2 do
    if ARGV[i] == '_principal' then
        local ok, v = pcall(cjson.decode, ARGV[i + 1])
        if ok and type(v) == 'string' then
            principal = v
        end
    end
end
return redis.call('XADD', KEYS[3], '*', 'job', ARGV[1], 'principal', principal)
