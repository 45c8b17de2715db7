#!/usr/bin/env bash
# What the tests need beyond Python, installed when missing: PostgreSQL and Redis (the tests
# use running ones, DATABASE_URL / REDIS_URL or the local defaults, else start throwaway
# servers from the Debian packages), bubblewrap (the platform sandbox), Node.js with npm and
# Chromium (the JS tier: the official JS SDK and a React page in headless Chromium; its npm
# packages are installed by tests/js/conftest.py, pinned by tests/js/package-lock.json).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
missing=()
if ! "$BIN/python" -c 'from agentctl.testing import services as s; s.postgres_url(); s.redis_url()' 2>/dev/null; then
  missing+=(postgresql redis-server)
fi
command -v bwrap >/dev/null || missing+=(bubblewrap)
{ command -v node >/dev/null && command -v npm >/dev/null; } || missing+=(nodejs npm)
[ -n "${CHROMIUM:-}" ] || [ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ] && ! command -v apt-get >/dev/null; then
  echo "the tests need these (Debian package names), not found here: ${missing[*]}" >&2
  echo "install them with your system's package manager; the tests that need one say so" >&2
elif [ ${#missing[@]} -gt 0 ]; then
  echo "installing the Debian packages the tests need: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}"
fi
# Arize Phoenix, the OpenTelemetry backend the traces test exports to, in a venv of its own
# under ~/.cache/agentctl-tests (tests/phoenix.py; a few minutes the first time, then kept).
if ! "$BIN/python" -m tests.phoenix >/dev/null; then
  echo "warning: Arize Phoenix could not be installed: tests/test_traces_phoenix.py will say why" >&2
fi
