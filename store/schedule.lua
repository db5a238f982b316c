-- schedule.lua: commits' follow-ups, at once: their outbox entries and their tables' next due
-- times (set or cleared), never letting an older version overwrite a newer due time.
-- Only keys of the {sched} slot; one call carries the follow-ups of any number of tables
-- (a process batches those of its concurrent commits).
-- KEYS[1] deadlines zset (table id -> epoch s)   KEYS[2] versions hash (table id -> version)
-- KEYS[3] outbox stream
-- ARGV[1] outbox MAXLEN (approximate), then per table, 5 + n values:
--   table id, table version the follow-up belongs to, due epoch seconds or '' for nothing due,
--   '0' live / '1' the game is over (nothing due; the version kept as '-<version>', a
--   tombstone) / '2' the table is gone (forget it), n, then n outbox entries (JSON) in order.
-- The versions hash keeps every live table (also one with nothing due), so the
-- sweeper can find a commit whose follow-up never ran (Store.sweep) and redo it; a
-- finished table stays as a tombstone until its state expires (the sweeper forgets it).
-- Outbox entries are added once per version: a version older than the known one
-- adds its entries only (a late follow-up; the newer due time stands); the known
-- version again adds none (its follow-up already ran, e.g. the sweeper's repair).
-- Returns, per table, 1 applied or 0 due time left alone (a newer version, or the end, is known).
local out = {}
local i = 2
while i <= #ARGV do
  local id, version, due, flag = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local n = tonumber(ARGV[i + 4])
  local first, last = i + 5, i + 4 + n
  i = last + 1
  local known = redis.call('HGET', KEYS[2], id)
  local finished = false
  if known then
    known = tonumber(known)
    if known < 0 then
      finished, known = true, -known
    end
  end
  if flag == '2' then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    out[#out + 1] = 1
  else
    if not known or version ~= known then
      for k = first, last do
        redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[1], '*', 'data', ARGV[k])
      end
    end
    if finished or (known and version < known) then
      out[#out + 1] = 0
    elseif flag == '1' then
      redis.call('ZREM', KEYS[1], id)
      redis.call('HSET', KEYS[2], id, -version)
      out[#out + 1] = 1
    else
      redis.call('HSET', KEYS[2], id, version)
      if due == '' then
        redis.call('ZREM', KEYS[1], id)
      else
        redis.call('ZADD', KEYS[1], due, id)
      end
      out[#out + 1] = 1
    end
  end
end
return out
