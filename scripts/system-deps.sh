#!/usr/bin/env bash
# Install the Debian packages the test suite needs (redis-server, chromium; prometheus for
# promtool and the Prometheus server, nginx for the deployment tests) when they are missing. Only as root on a Debian-like system; otherwise say what is missing.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)  # promtool and the server (tests/test_metrics.py)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)  # tests/test_deploy_*.py
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "warning: missing ${missing[*]} (install them, e.g. apt-get install ${missing[*]}); tests that need them are skipped" >&2
fi
