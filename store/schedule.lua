-- schedule.lua: a commit's follow-up, at once: its outbox entries and the table's next due
-- time (set or cleared), never letting an older version overwrite a newer due time.
-- KEYS[1] deadlines zset (table id -> epoch s)   KEYS[2] versions hash (table id -> version)
-- KEYS[3] outbox stream
-- ARGV[1] table id   ARGV[2] table version the follow-up belongs to
-- ARGV[3] due epoch seconds, or '' for nothing due
-- ARGV[4] '0' live, '1' the game is over (nothing due; the version kept as '-<version>',
--         a tombstone), '2' the table is gone (forget it)
-- ARGV[5] outbox MAXLEN (approximate)   ARGV[6 ..] outbox entries (JSON), in order
-- The versions hash keeps every live table (also one with nothing due), so the
-- sweeper can find a commit whose follow-up never ran (Store.sweep) and redo it; a
-- finished table stays as a tombstone until its state expires (the sweeper forgets it).
-- Outbox entries are added once per version: a version older than the known one
-- adds its entries only (a late follow-up; the newer due time stands); the known
-- version again adds none (its follow-up already ran, e.g. the sweeper's repair).
-- Returns 1 applied, 0 due time left alone (a newer version, or the end, is already known).
local known = redis.call('HGET', KEYS[2], ARGV[1])
local version = tonumber(ARGV[2])
local finished = false
if known then
  known = tonumber(known)
  if known < 0 then
    finished, known = true, -known
  end
end
if ARGV[4] == '2' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
if not known or version ~= known then
  for i = 6, #ARGV do
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'data', ARGV[i])
  end
end
if finished or (known and version < known) then
  return 0
end
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], -version)
  return 1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
