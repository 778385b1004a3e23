-- iam.lua: every write to IAM users and roles, their tags, inline policies and access keys
-- (store_iam.c). One script with verbs, so that each check and its write are one atomic step.
-- Roles use the same verbs on their own keys (ty:iam:role:, ty:iam:roles, ty:iam:rtags:,
-- ty:iam:rpol:, ty:iam:rpolsz:, ty:iam:rkeys: unused); "NOSUCHUSER" then means no such role.
--
-- KEYS[1] ty:iam:user:<lname>    hash: name id path arn created ver
-- KEYS[2] ty:iam:users           sorted set of lname (score 0: lexical order for ListUsers)
-- KEYS[3] ty:iam:utags:<lname>   hash: tag key -> value
-- KEYS[4] ty:iam:upol:<lname>    hash: policy name -> document (the text as put)
-- KEYS[5] ty:iam:upolsz:<lname>  hash: policy name -> its size as IAM counts it
-- KEYS[6] ty:iam:ukeys:<lname>   hash: access key id -> "<Status> <created epoch>"
-- KEYS[7] ty:iam:version         counter; every change that authorisation depends on takes
--                                the next value into the user's `ver` (the policy cache key)
-- KEYS[8] ty:principal:<akid>    (delete_key, update_key) the SigV4 principal of the key
-- ARGV[1] verb, then the verb's arguments.
-- Errors: "NOSUCHUSER", "EXISTS", "CONFLICT keys|policies", "LIMIT tags|size|keys",
-- "NOSUCHPOLICY", "NOSUCHKEY".
local verb = ARGV[1]

local function bump()
    local v = redis.call('INCR', KEYS[7])
    redis.call('HSET', KEYS[1], 'ver', v)
    return v
end

local function need_user()
    if redis.call('EXISTS', KEYS[1]) == 0 then
        return redis.error_reply('NOSUCHUSER')
    end
    return nil
end

-- tags from ARGV[first..] as key, value pairs; at most max tags in all after the merge
local function put_tags(first, max)
    local n = redis.call('HLEN', KEYS[3])
    for i = first, #ARGV, 2 do
        if redis.call('HEXISTS', KEYS[3], ARGV[i]) == 0 then
            n = n + 1
        end
    end
    if n > max then
        return redis.error_reply('LIMIT tags')
    end
    for i = first, #ARGV, 2 do
        redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
    end
    return nil
end

if verb == 'create' or verb == 'create_role' then
    -- ARGV: name id path arn created maxtags [trust description maxsession] tags...
    if redis.call('EXISTS', KEYS[1]) == 1 then
        return redis.error_reply('EXISTS')
    end
    local first = 8
    if verb == 'create_role' then
        first = 11
    end
    redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
    local e = put_tags(first, tonumber(ARGV[7]))
    if e then
        return e
    end
    redis.call('HSET', KEYS[1], 'name', ARGV[2], 'id', ARGV[3], 'path', ARGV[4], 'arn', ARGV[5],
        'created', ARGV[6])
    if verb == 'create_role' then
        redis.call('HSET', KEYS[1], 'trust', ARGV[8], 'desc', ARGV[9], 'maxsess', ARGV[10])
    end
    redis.call('ZADD', KEYS[2], 0, string.lower(ARGV[2]))
    return bump()
elseif verb == 'delete' then
    local e = need_user()
    if e then
        return e
    end
    if redis.call('HLEN', KEYS[6]) > 0 then
        return redis.error_reply('CONFLICT keys')
    end
    if redis.call('HLEN', KEYS[4]) > 0 then
        return redis.error_reply('CONFLICT policies')
    end
    local name = redis.call('HGET', KEYS[1], 'name')
    redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
    redis.call('ZREM', KEYS[2], string.lower(name))
    return redis.call('INCR', KEYS[7])
elseif verb == 'tag' then
    -- ARGV: maxtags tags...
    local e = need_user()
    if e then
        return e
    end
    e = put_tags(3, tonumber(ARGV[2]))
    if e then
        return e
    end
    return bump()
elseif verb == 'untag' then
    -- ARGV: keys...
    local e = need_user()
    if e then
        return e
    end
    for i = 2, #ARGV do
        redis.call('HDEL', KEYS[3], ARGV[i])
    end
    return bump()
elseif verb == 'put_policy' then
    -- ARGV: policy name, document, its size, the aggregate limit
    local e = need_user()
    if e then
        return e
    end
    local total = tonumber(ARGV[4])
    local sizes = redis.call('HGETALL', KEYS[5])
    for i = 1, #sizes, 2 do
        if sizes[i] ~= ARGV[2] then
            total = total + tonumber(sizes[i + 1])
        end
    end
    if total > tonumber(ARGV[5]) then
        return redis.error_reply('LIMIT size')
    end
    redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
    redis.call('HSET', KEYS[5], ARGV[2], ARGV[4])
    return bump()
elseif verb == 'delete_policy' then
    local e = need_user()
    if e then
        return e
    end
    if redis.call('HDEL', KEYS[4], ARGV[2]) == 0 then
        return redis.error_reply('NOSUCHPOLICY')
    end
    redis.call('HDEL', KEYS[5], ARGV[2])
    return bump()
elseif verb == 'create_key' then
    -- ARGV: access key id, created, the per-user limit (0 = none)
    local e = need_user()
    if e then
        return e
    end
    local max = tonumber(ARGV[4])
    if max > 0 and redis.call('HLEN', KEYS[6]) >= max then
        return redis.error_reply('LIMIT keys')
    end
    redis.call('HSETNX', KEYS[6], ARGV[2], 'Active ' .. ARGV[3])
    return 1
elseif verb == 'update_key' then
    -- ARGV: access key id, new status (Active|Inactive); the principal keeps it in `status`
    local e = need_user()
    if e then
        return e
    end
    local v = redis.call('HGET', KEYS[6], ARGV[2])
    if not v then
        return redis.error_reply('NOSUCHKEY')
    end
    local created = string.match(v, ' (.*)$') or '0'
    redis.call('HSET', KEYS[6], ARGV[2], ARGV[3] .. ' ' .. created)
    if redis.call('EXISTS', KEYS[8]) == 1 then
        redis.call('HSET', KEYS[8], 'status', ARGV[3])
    end
    return 1
elseif verb == 'delete_key' then
    local e = need_user()
    if e then
        return e
    end
    if redis.call('HDEL', KEYS[6], ARGV[2]) == 0 then
        return redis.error_reply('NOSUCHKEY')
    end
    redis.call('DEL', KEYS[8])
    return 1
end
return redis.error_reply('ERR iam.lua: unknown verb ' .. tostring(verb))
