#!/usr/bin/env bash
# Make sure a Redis answers at 127.0.0.1:6379 (the tests' REDIS_URL default).
set -uo pipefail
ping() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
ping && exit 0
if ! command -v redis-server >/dev/null 2>&1; then
  echo "warning: no redis-server; tests that need the real Redis are skipped" >&2
  exit 0
fi
mkdir -p /tmp/karty-redis
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
  --dir /tmp/karty-redis --logfile /tmp/karty-redis/redis.log
for _ in $(seq 1 50); do ping && exit 0; sleep 0.1; done
echo "warning: redis-server did not answer" >&2
