-- log_append.lua: appends CloudWatch log events to one stream, creating it on first use.
-- KEYS[1] ty:log:<group>:<stream> (stream)  KEYS[2] ty:logstreams:<group> (zset, score 0,
-- ordered by name)  KEYS[3] ty:logstream:<group>:<stream> (hash of the stream's metadata)
-- ARGV[1] stream name  ARGV[2] now (ms)  ARGV[3..] timestamp, message pairs
-- Entry ids come from XADD *, so they increase monotonically. Returns the number appended.
if redis.call('EXISTS', KEYS[3]) == 0 then
    redis.call('HSET', KEYS[3], 'creationTime', ARGV[2], 'storedBytes', 0)
    redis.call('ZADD', KEYS[2], 0, ARGV[1])
end
local n = 0
local bytes = 0
local first = tonumber(redis.call('HGET', KEYS[3], 'firstEventTimestamp') or '')
local last = tonumber(redis.call('HGET', KEYS[3], 'lastEventTimestamp') or '')
local i = 3
while i < #ARGV do
    local ts = ARGV[i]
    redis.call('XADD', KEYS[1], '*', 'ts', ts, 'msg', ARGV[i + 1])
    local tsn = tonumber(ts)
    if tsn and (not first or tsn < first) then
        first = tsn
        redis.call('HSET', KEYS[3], 'firstEventTimestamp', ts)
    end
    if tsn and (not last or tsn > last) then
        last = tsn
        redis.call('HSET', KEYS[3], 'lastEventTimestamp', ts)
    end
    bytes = bytes + #ARGV[i + 1]
    n = n + 1
    i = i + 2
end
if n > 0 then
    redis.call('HSET', KEYS[3], 'lastIngestionTime', ARGV[2])
    redis.call('HINCRBY', KEYS[3], 'storedBytes', bytes)
end
return n
