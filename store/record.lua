-- record.lua: append a rated match to the ledger once and fold it into the boards.
-- KEYS[1] ledger hash (table id -> match JSON)   KEYS[2] names hash (user id -> name)
-- KEYS[3 .. 2+ARGV[3]] board hashes ("<user>|<table>" -> balance)
-- KEYS[3+ARGV[3] ..] per-user results lists (one per ARGV[5+2k] entry)
-- ARGV[1] table id   ARGV[2] match JSON   ARGV[3] number of board keys
-- ARGV[4] number of players n, then n times: user id, balance, name, result JSON
-- Returns 1 recorded, 0 already in the ledger (nothing changed: idempotent on table id).
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
local nboards = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local user = ARGV[5 + 4 * i]
  local balance = ARGV[6 + 4 * i]
  redis.call('HSET', KEYS[2], user, ARGV[7 + 4 * i])
  for b = 1, nboards do
    redis.call('HSET', KEYS[2 + b], user .. '|' .. ARGV[1], balance)
  end
  local results = KEYS[3 + nboards + i]
  redis.call('LPUSH', results, ARGV[8 + 4 * i])
  redis.call('LTRIM', results, 0, 49)
end
return 1
