-- commit.lua: compare-and-set one action of a game, in one round trip.
-- KEYS[1] table hash (fields version, doc)   KEYS[2] log list   KEYS[3] cids hash
-- ARGV[1] expected version   ARGV[2] new version   ARGV[3] new doc (JSON)
-- ARGV[4] log entry (JSON)   ARGV[5] '<seat>|<client_action_id>' or ''   ARGV[6] outcome (JSON) for that id
-- ARGV[7] TTL seconds for the three keys (48 h, or 7 days once the game is over)
-- ARGV[8] pub/sub channel    ARGV[9] message to publish
-- Returns {1, new version} committed; {0, current version} conflict (version moved on);
-- {2, outcome JSON} the client_action_id was already committed (nothing written);
-- {-1, 0} no such table (expired or never created).
local cur = redis.call('HGET', KEYS[1], 'version')
if not cur then
  return {-1, 0}
end
if ARGV[5] ~= '' then
  local first = redis.call('HGET', KEYS[3], ARGV[5])
  if first then
    return {2, first}
  end
end
if cur ~= ARGV[1] then
  return {0, tonumber(cur)}
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'doc', ARGV[3])
redis.call('RPUSH', KEYS[2], ARGV[4])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[5], ARGV[6])
end
local ttl = tonumber(ARGV[7])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('EXPIRE', KEYS[3], ttl)
end
redis.call('PUBLISH', ARGV[8], ARGV[9])
return {1, tonumber(ARGV[2])}
