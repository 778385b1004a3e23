-- quota_count.lua: the account's and the principals' quotas' counters (quota.c), each read and its reservation in one
-- atomic step.
--
-- job_reserve: KEYS[1] ty:idx:job:status:InProgress (set of job names, kept by the job scripts)
--              KEYS[2] ty:quota:jobs:<instance type> (hash: job name -> "<expiry> <instances>",
--              the reservations of creates under way)
--   ARGV: verb now name instances limit ttl
--   Usage = the InstanceCount of every InProgress job of that instance type (its document's
--   ResourceConfig member, JSON text in ty:job:<name>) + live reservations of jobs not yet in
--   the set. Over the limit: error "LIMIT <usage>"; otherwise the reservation is recorded
--   (it lives until released or ttl seconds) and the usage is returned.
-- job_release: KEYS[2] as above; ARGV: verb now name. Drops the reservation.
-- principal_reserve: KEYS[1] ty:idx:job:status:InProgress
--              KEYS[2] ty:quota:principal (hash: job name -> "<expiry> <instances> <principal>")
--   ARGV: verb now name instances limit ttl principal
--   Usage = the instances (InstanceCount, or the sum of InstanceGroups' counts) of every
--   InProgress job whose _principal is principal + live reservations of its other creates not
--   yet in the set; as job_reserve otherwise.
-- principal_release: KEYS[2] as above; ARGV: verb now name. Drops the reservation.
-- kids_reserve: KEYS[1] ty:kids:<kind>:<id> (set of child resource keys, res.lua's)
--              KEYS[2] ty:quota:kids:<kind>:<id> (hash: child key -> expiry, creates under way)
--   ARGV: verb now prefix limit child ttl. Counts the children whose key starts with prefix and
--   whose status is live (not Deleting, Deleted or Failed), plus live reservations of other
--   children not yet in the set; error "LIMIT <count>" when the count has reached the limit,
--   else records child's reservation and returns the count.
-- kids_release: KEYS[2] as above; ARGV: verb now child. Drops the reservation.
local verb = ARGV[1]
local now = tonumber(ARGV[2])

-- The instances a job's ResourceConfig (decoded) asks for: InstanceCount, or the sum of its
-- InstanceGroups' counts.
local function instances(v)
    if type(v['InstanceGroups']) == 'table' and not v['InstanceType'] then
        local n = 0
        for _, g in ipairs(v['InstanceGroups']) do
            n = n + (tonumber(type(g) == 'table' and g['InstanceCount']) or 1)
        end
        return n
    end
    return tonumber(v['InstanceCount']) or 1
end

-- job_reserve and principal_reserve: counts(job) is what an InProgress job counts (0: not
-- this quota's); a reservation counts when its value's third field is who ('' for a type's).
local function reserve(counts, who)
    local name, want, limit, ttl = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
    local used = 0
    local running = {}
    for _, job in ipairs(redis.call('SMEMBERS', KEYS[1])) do
        used = used + counts(job)
        running[job] = true
    end
    local resv = redis.call('HGETALL', KEYS[2])
    for i = 1, #resv, 2 do
        local exp, n, p = string.match(resv[i + 1], '^(%S+) (%S+) ?(.*)$')
        if not exp or tonumber(exp) < now then
            redis.call('HDEL', KEYS[2], resv[i])
        elseif p == who and not running[resv[i]] and resv[i] ~= name then
            used = used + tonumber(n)
        end
    end
    if used + want > limit then
        return redis.error_reply('LIMIT ' .. used)
    end
    local rec = string.format('%.3f %d', now + ttl, want)
    if who ~= '' then
        rec = rec .. ' ' .. who
    end
    redis.call('HSET', KEYS[2], name, rec)
    return used
end

if verb == 'job_reserve' then
    local itype = string.sub(KEYS[2], string.len('ty:quota:jobs:') + 1)
    return reserve(function(job)
        local ok, v = pcall(cjson.decode, redis.call('HGET', 'ty:job:' .. job, 'ResourceConfig') or '')
        if ok and type(v) == 'table' and v['InstanceType'] == itype then
            return tonumber(v['InstanceCount']) or 1
        end
        return 0
    end, '')
elseif verb == 'principal_reserve' then
    local who = ARGV[7]
    return reserve(function(job)
        local f = redis.call('HMGET', 'ty:job:' .. job, '_principal', 'ResourceConfig')
        local okp, p = pcall(cjson.decode, f[1] or '')
        local okr, v = pcall(cjson.decode, f[2] or '')
        if okp and p == who and okr and type(v) == 'table' then
            return instances(v)
        end
        return 0
    end, who)
elseif verb == 'job_release' or verb == 'principal_release' then
    redis.call('HDEL', KEYS[2], ARGV[3])
    return 0
elseif verb == 'kids_reserve' then
    local prefix, limit, child, ttl = ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
    local n = 0
    local present = {}
    for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do
        present[key] = true
        if string.sub(key, 1, string.len(prefix)) == prefix then
            local st = redis.call('HGET', key, 'status')
            if st and st ~= 'Deleting' and st ~= 'Deleted' and st ~= 'Failed' then
                n = n + 1
            end
        end
    end
    local resv = redis.call('HGETALL', KEYS[2])
    for i = 1, #resv, 2 do
        if tonumber(resv[i + 1]) < now then
            redis.call('HDEL', KEYS[2], resv[i])
        elseif resv[i] ~= child and not present[resv[i]] then
            n = n + 1
        end
    end
    if n >= limit then
        return redis.error_reply('LIMIT ' .. n)
    end
    redis.call('HSET', KEYS[2], child, string.format('%.3f', now + ttl))
    redis.call('EXPIRE', KEYS[2], ttl * 2)
    return n
elseif verb == 'kids_release' then
    redis.call('HDEL', KEYS[2], ARGV[3])
    return 0
end
return redis.error_reply('ERR quota_count.lua: unknown verb ' .. tostring(verb))
