-- release.lua: end a claim that committed nothing.
-- KEYS[1] deadlines zset   KEYS[2] versions hash
-- ARGV[1] table id   ARGV[2] the claim's lease token   ARGV[3] next due epoch s, or '' for none
-- ARGV[4] '1' when the table is gone (forget it), else '0'
-- Only when the score is still the token: a commit meanwhile has set a newer due time.
-- Returns 1 released, 0 left alone.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then
  return 0
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  if ARGV[4] == '1' then
    redis.call('HDEL', KEYS[2], ARGV[1])
  end
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
