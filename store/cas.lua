-- cas.lua: compare-and-set a versioned document (lobbies; a table's first write).
-- KEYS[1] hash with fields version, doc
-- ARGV[1] expected version, or '' when the key must not exist yet
-- ARGV[2] new version   ARGV[3] new doc (JSON)   ARGV[4] TTL seconds
-- Returns 1 written, 0 conflict (version differs, or the key exists / is gone).
local cur = redis.call('HGET', KEYS[1], 'version')
if ARGV[1] == '' then
  if cur then
    return 0
  end
elseif cur ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'doc', ARGV[3])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
