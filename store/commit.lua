-- commit.lua: commit one move of a game in one round trip (compare-and-set), and publish it.
-- Only the table's own keys (one hash tag, one cluster slot):
-- KEYS[1] table hash (fields version, doc)   KEYS[2] log list   KEYS[3] cids hash
-- KEYS[4] watchers set: the ids of the processes (store.live) listening on the channel
-- ARGV[1] expected version   ARGV[2] new version   ARGV[3] new doc (JSON, holds the move's events)
-- ARGV[4] log entry: '<compact JSON>\t<events JSON>'   ARGV[5] '<seat>|<client_action_id>' or ''
-- ARGV[6] TTL seconds for the keys (48 h, or 7 days once the game is over)
-- ARGV[7] pub/sub channel   ARGV[8] '1' when this move ends the game, else '0' (not used here:
--         the log is compacted after such a commit, by compact.lua)
-- ARGV[9], ARGV[10] the message's head and tail: ARGV[9] .. new doc .. ARGV[10] is published
-- (store.live.pack: the version, the document and each seat's ready state message), so every
-- process feeds its sockets without reading Redis and without making those messages again.
-- ARGV[11] 'PUBLISH' (one Redis) or 'SPUBLISH' (a Redis Cluster: sharded pub/sub, the channel
-- carries the table's hash tag, so it is in this script's slot; store.pubsub)
-- ARGV[12] the committing process's listener id: the message is published only when another
-- listener is in KEYS[4] (the committer feeds its own sockets from the commit's answer; a
-- listener joins the set before it subscribes and reads the document, so it either
-- gets the message or reads this commit)
-- client_action_ids are remembered by version only (cids: '<seat>|<id>' -> version).
-- Returns {1, new version} committed;
--         {0, current version, current doc} conflict (the caller retries on that doc, no reload);
--         {2, first version, its log entry, current doc} the id was already committed (nothing written);
--         {-1, 0} no such table (expired or never created).
local cur = redis.call('HGET', KEYS[1], 'version')
if not cur then
  return {-1, 0}
end
if ARGV[5] ~= '' then
  local first = redis.call('HGET', KEYS[3], ARGV[5])
  if first then
    local entry = false
    local n = tonumber(first)
    if n then
      entry = redis.call('LINDEX', KEYS[2], n - 1)
    end
    return {2, first, entry, redis.call('HGET', KEYS[1], 'doc')}
  end
end
if cur ~= ARGV[1] then
  return {0, tonumber(cur), redis.call('HGET', KEYS[1], 'doc')}
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'doc', ARGV[3])
redis.call('RPUSH', KEYS[2], ARGV[4])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[5], ARGV[2])
end
local ttl = tonumber(ARGV[6])
redis.call('EXPIRE', KEYS[1], ttl)
redis.call('EXPIRE', KEYS[2], ttl)
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('EXPIRE', KEYS[3], ttl)
end
local others = redis.call('SCARD', KEYS[4])
if others > 0 and redis.call('SISMEMBER', KEYS[4], ARGV[12]) == 1 then
  others = others - 1
end
if others > 0 then
  redis.call(ARGV[11], ARGV[7], ARGV[9] .. ARGV[3] .. ARGV[10])
end
return {1, tonumber(ARGV[2])}
