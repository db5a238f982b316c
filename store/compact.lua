-- compact.lua: once a game is over, its log and client_action_ids become one compressed entry.
-- Only the table's own keys (one hash tag, one cluster slot):
-- KEYS[1] table hash   KEYS[2] log list   KEYS[3] cids hash
-- ARGV[1] the table's final version (its log then holds exactly that many entries)
-- ARGV[2] the compact log (one string: 'z1:' and the compressed entries)
-- Idempotent: a table at another version, a log already compacted or not complete is left alone.
-- Returns 1 compacted, 0 left alone.
local cur = redis.call('HGET', KEYS[1], 'version')
if cur ~= ARGV[1] then
  return 0
end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[1]) then
  return 0
end
local ttl = redis.call('TTL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('RPUSH', KEYS[2], ARGV[2])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[2], ttl)
end
return 1
