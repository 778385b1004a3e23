-- res.lua: the one script that changes Studio resources (domains, user profiles, apps) and
-- console sessions (store_res.c). One script with verbs, so that every verb shares `settle`.
--
-- A resource is a hash ty:res:<kind>:<id> with the fields
--   id       the resource id (d-xxx, d-xxx/profile, d-xxx/profile/apptype/app)
--   doc      the Describe document as JSON text, opaque here (no cjson round trip)
--   status   Pending | InService | Updating | Deleting | Deleted | Failed
--   since    epoch seconds the current status began (delays are measured from it)
--   created, modified   epoch seconds (modified is LastModifiedTime)
--   idx      the kind's creation-time index (sorted set of resource keys)
--   pkids    the parent's children set (of resource keys), '' for a top-level resource
--   kids     this resource's children set
--   keep     seconds a Deleted resource stays listed; 0 = removed as soon as it is deleted
--   ver      write counter, for compare-and-set updates
--   tags     the resource's tag hash (ty:tags:<arn>), deleted with it; '' for none
--
-- ARGV[1] verb, ARGV[2] now, ARGV[3] pending delay, ARGV[4] deleting delay (seconds).
-- Time-driven transitions are applied lazily, by `settle`, whenever a verb touches a resource:
-- Pending/Updating -> InService after the pending delay; Deleting -> Deleted (keep > 0) or
-- gone after the deleting delay; Deleted -> gone after keep. A transition is dated when it
-- became due, not when it was noticed.
-- Errors: "NOTFOUND x", "NOPARENT x", "PARENTSTATE <status>", "INUSE <status>",
-- "CONFLICT <status>", "STALE <ver>", "HASKIDS <n>".
local verb = ARGV[1]
local now = tonumber(ARGV[2])
local pend = tonumber(ARGV[3])
local deld = tonumber(ARGV[4])

local function fmt(t)
    return string.format('%.3f', t)
end

local function member_of(list, v)
    for item in string.gmatch(list, '[^,]+') do
        if item == v then
            return true
        end
    end
    return false
end

local function remove(key, idx, pkids, kids, tags)
    redis.call('DEL', key)
    if tags and tags ~= '' then
        redis.call('DEL', tags)
    end
    if idx and idx ~= '' then
        redis.call('ZREM', idx, key)
    end
    if pkids and pkids ~= '' then
        redis.call('SREM', pkids, key)
    end
    if kids and kids ~= '' and redis.call('SCARD', kids) == 0 then
        redis.call('DEL', kids)
    end
end

local function set_status(key, st, at)
    redis.call('HSET', key, 'status', st, 'since', fmt(at), 'modified', fmt(at))
    redis.call('HINCRBY', key, 'ver', 1)
end

-- Applies due transitions; returns the status, or nil when the resource does not (or no
-- longer) exist.
local function settle(key)
    local f = redis.call('HMGET', key, 'status', 'since', 'keep', 'idx', 'pkids', 'kids', 'tags')
    local st = f[1]
    if not st then
        return nil
    end
    local since = tonumber(f[2]) or 0
    local keep = tonumber(f[3]) or 0
    if (st == 'Pending' or st == 'Updating') and now - since >= pend then
        since = since + pend
        st = 'InService'
        set_status(key, st, since)
    elseif st == 'Deleting' and now - since >= deld then
        since = since + deld
        if keep <= 0 then
            remove(key, f[4], f[5], f[6], f[7])
            return nil
        end
        st = 'Deleted'
        set_status(key, st, since)
    end
    if st == 'Deleted' and now - since >= keep then
        remove(key, f[4], f[5], f[6], f[7])
        return nil
    end
    return st
end

if verb == 'create' then
    -- KEYS: resource, index, parent ('' = none), parent's kids, own kids
    -- ARGV[5] id, [6] status, [7] doc, [8] keep, [9] statuses an existing resource may be
    -- replaced in (comma list), [10] parent statuses that refuse children, [11] tags key
    local key, idx, parent, pkids, kids = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
    if parent ~= '' then
        local pst = settle(parent)
        if not pst then
            return redis.error_reply('NOPARENT ' .. parent)
        end
        if member_of(ARGV[10], pst) then
            return redis.error_reply('PARENTSTATE ' .. pst)
        end
    end
    local cur = settle(key)
    if cur then
        if not member_of(ARGV[9], cur) then
            return redis.error_reply('INUSE ' .. cur)
        end
        remove(key, idx, pkids, '', redis.call('HGET', key, 'tags'))
    end
    redis.call('HSET', key, 'id', ARGV[5], 'doc', ARGV[7], 'status', ARGV[6], 'since', fmt(now),
        'created', fmt(now), 'modified', fmt(now), 'idx', idx, 'pkids', pkids, 'kids', kids,
        'keep', ARGV[8], 'ver', '1', 'tags', ARGV[11])
    redis.call('ZADD', idx, now, key)
    if pkids ~= '' then
        redis.call('SADD', pkids, key)
    end
    return redis.call('HGETALL', key)
elseif verb == 'get' then
    if not settle(KEYS[1]) then
        return redis.error_reply('NOTFOUND ' .. KEYS[1])
    end
    return redis.call('HGETALL', KEYS[1])
elseif verb == 'list' then
    -- KEYS[1]: a sorted set (an index) or, with ARGV[5] == 'set', a children set
    local keys
    if ARGV[5] == 'set' then
        keys = redis.call('SMEMBERS', KEYS[1])
    else
        keys = redis.call('ZRANGE', KEYS[1], 0, -1)
    end
    local out = {}
    for _, k in ipairs(keys) do
        if settle(k) then
            out[#out + 1] = redis.call('HGETALL', k)
        end
    end
    return out
elseif verb == 'update' then
    -- ARGV[5] expected statuses ('' = any), [6] new status ('' = keep), [7] doc ('' = keep),
    -- [8] expected ver ('' = any)
    local key = KEYS[1]
    local st = settle(key)
    if not st then
        return redis.error_reply('NOTFOUND ' .. key)
    end
    if ARGV[5] ~= '' and not member_of(ARGV[5], st) then
        return redis.error_reply('CONFLICT ' .. st)
    end
    local ver = redis.call('HGET', key, 'ver')
    if ARGV[8] ~= '' and ARGV[8] ~= ver then
        return redis.error_reply('STALE ' .. ver)
    end
    if ARGV[7] ~= '' then
        redis.call('HSET', key, 'doc', ARGV[7])
    end
    if ARGV[6] ~= '' and ARGV[6] ~= st then
        redis.call('HSET', key, 'status', ARGV[6], 'since', fmt(now))
    end
    redis.call('HSET', key, 'modified', fmt(now))
    redis.call('HINCRBY', key, 'ver', 1)
    return redis.call('HGETALL', key)
elseif verb == 'delete' then
    -- ARGV[5] expected statuses ('' = any), [6] children statuses that do not count
    -- ('' = every child counts), [7] new status ('' = remove now)
    local key = KEYS[1]
    local st = settle(key)
    if not st then
        return redis.error_reply('NOTFOUND ' .. key)
    end
    if ARGV[5] ~= '' and not member_of(ARGV[5], st) then
        return redis.error_reply('CONFLICT ' .. st)
    end
    local f = redis.call('HMGET', key, 'idx', 'pkids', 'kids', 'tags')
    local live = 0
    if f[3] and f[3] ~= '' then
        for _, k in ipairs(redis.call('SMEMBERS', f[3])) do
            local kst = settle(k)
            if kst and not member_of(ARGV[6], kst) then
                live = live + 1
            end
        end
    end
    if live > 0 then
        return redis.error_reply('HASKIDS ' .. live)
    end
    if ARGV[7] == '' then
        remove(key, f[1], f[2], f[3], f[4])
        return redis.status_reply('OK')
    end
    set_status(key, ARGV[7], now)
    return redis.call('HGETALL', key)
elseif verb == 'revoke' then
    -- KEYS[1] a set of session keys: deletes them and the set; returns how many existed
    local n = 0
    for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do
        n = n + redis.call('DEL', k)
    end
    redis.call('DEL', KEYS[1])
    return n
end
return redis.error_reply('ERR res.lua: unknown verb ' .. tostring(verb))
