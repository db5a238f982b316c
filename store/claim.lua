-- claim.lua: claim due tables exactly once by leasing them.
-- KEYS[1] deadlines zset
-- ARGV[1] now (epoch s)   ARGV[2] lease token: a unique score in the future (now + lease)
-- ARGV[3] how many at most
-- Every due member's score becomes the token, so no other worker sees it due until
-- the lease runs out (a crashed worker's claim comes due again: no deadline is lost).
-- Returns the claimed table ids.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], ARGV[2], member)
end
return due
