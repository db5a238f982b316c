-- bucket.lua: take one token from a user's action bucket, shared by every process.
-- KEYS[1] bucket hash (fields t = tokens, at = epoch s of the last change)
-- ARGV[1] now (epoch s)   ARGV[2] rate (tokens per second)   ARGV[3] burst (bucket size)
-- Refills rate * elapsed up to burst; a caller whose clock is behind the last change
-- refills nothing (never a negative refill). Returns '0' when a token was taken, else
-- the seconds until one is back (a string: Lua numbers would be cut to integers).
local now, rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(b[1]) or burst
local at = tonumber(b[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * rate)
  at = now
end
if tokens < 1 - 1e-6 then  -- (epoch seconds as doubles are exact to about 1e-7 s)
  if rate <= 0 then
    return '60'
  end
  return tostring((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 't', tostring(math.max(0, tokens - 1)), 'at', tostring(at))
local full = rate > 0 and math.ceil(burst / rate * 1000) or 60000
redis.call('PEXPIRE', KEYS[1], full + 1000)  -- a full bucket is the same as none
return '0'
