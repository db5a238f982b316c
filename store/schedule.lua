-- schedule.lua: set (or clear) a table's next due time, never from an older version.
-- KEYS[1] deadlines zset (table id -> epoch s)   KEYS[2] versions hash (table id -> version)
-- ARGV[1] table id   ARGV[2] table version the due time was computed from
-- ARGV[3] due epoch seconds, or '' for nothing due
-- ARGV[4] '1' when the game is over or gone (forget the table), else '0'
-- The versions hash keeps every live table (also one with nothing due), so the
-- sweeper can find a commit whose follow-up never ran (Store.sweep).
-- Returns 1 applied, 0 ignored (a newer version already scheduled this table).
local known = redis.call('HGET', KEYS[2], ARGV[1])
if known and tonumber(ARGV[2]) < tonumber(known) then
  return 0
end
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
