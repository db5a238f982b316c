-- move.lua: one move on a single Redis in one round trip: the player's action bucket
-- (bucket.lua), the commit (commit.lua) and the commit's follow-up (schedule.lua), atomically.
-- Their keys are in different slots, so this runs only on a single Redis; a Redis Cluster
-- runs the three as separate steps (store.tables). store.store composes the script sent to
-- Redis: the three files, each as a local function of (KEYS, ARGV), then this one.
-- KEYS[1..4] commit.lua's   KEYS[5] the user's action bucket (any key when none is taken)
-- KEYS[6..8] schedule.lua's (the table's shard)
-- ARGV[1] c: how many of the ARGV after the first two are commit.lua's   ARGV[2] b: how many
-- then are bucket.lua's (0: no token to take, or 3)   ARGV[3 .. 2+c] commit.lua's, then b of
-- bucket.lua's, then schedule.lua's for this table (none: no follow-up here).
-- Returns {3, seconds until a token is back} when the bucket is empty (nothing else done),
-- else commit.lua's answer; the follow-up runs only when the commit wrote ({1, version}).
local c, b = tonumber(ARGV[1]), tonumber(ARGV[2])
local function part(first, last)
  local t = {}
  for i = first, last do
    t[#t + 1] = ARGV[i]
  end
  return t
end
if b > 0 then
  local wait = bucket({KEYS[5]}, part(3 + c, 2 + c + b))
  if wait ~= '0' then
    return {3, wait}
  end
end
local res = commit({KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, part(3, 2 + c))
if res[1] == 1 then
  schedule({KEYS[6], KEYS[7], KEYS[8]}, part(3 + c + b, #ARGV))
end
return res
