#!/usr/bin/env bash
# Make sure a Redis answers at 127.0.0.1:6379 (the tests' REDIS_URL default), or fail
# loudly: the tests that need the real Redis are errors without one, never skipped
# silently (KARTY_ALLOW_NO_REDIS=1 skips them on purpose).
set -uo pipefail
ping() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
fail() {
  if [ -n "${KARTY_ALLOW_NO_REDIS:-}" ] && [ "${KARTY_ALLOW_NO_REDIS}" != 0 ]; then
    echo "warning: $1; KARTY_ALLOW_NO_REDIS is set, so the tests that need the real Redis are skipped" >&2
    exit 0
  fi
  echo "error: $1. Install redis-server (apt-get install redis-server), or set" \
       "KARTY_ALLOW_NO_REDIS=1 to skip the tests that need it" >&2
  exit 1
}
[ -n "${REDIS_URL:-}" ] && exit 0  # the tests use that Redis (conftest checks that it answers)
ping && exit 0
command -v redis-server >/dev/null 2>&1 || fail "no Redis answers at 127.0.0.1:6379 and there is no redis-server"
mkdir -p /tmp/karty-redis
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
  --dir /tmp/karty-redis --logfile /tmp/karty-redis/redis.log
for _ in $(seq 1 100); do ping && exit 0; sleep 0.1; done
fail "redis-server started but did not answer at 127.0.0.1:6379 (see /tmp/karty-redis/redis.log)"
