-- sockets.lua: a user's open WebSockets across every process, as leases.
-- KEYS[1] sorted set (socket id -> epoch s its lease ends)
-- ARGV[1] 'open' | 'keep'   ARGV[2] socket id   ARGV[3] now (epoch s)   ARGV[4] lease seconds
-- ARGV[5] cap (most sockets at once; 'open' only)
-- Expired leases (a process that died without closing) are dropped first. 'open' admits
-- the socket when fewer than cap are open (or it is already admitted); 'keep' renews an
-- admitted socket's lease (and takes it back if it lapsed). Returns 1 admitted, 0 refused.
local now, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[1] == 'open' and not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then
    return 0
  end
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[2])
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 1)
return 1
