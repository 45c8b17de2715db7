#!/usr/bin/env bash
# `make demo`: scaffold ./demo and run it with `agentctl dev`, answered by the scripted
# OpenAI-compatible model of agentctl.testing — no API key, no network.
#
#   DEMO_DIR   where to scaffold the project (demo; replaced on every run)
#   PORT       port of the agent server (2024, or a free one when 2024 is taken; 0: any)
#   DEMO_ONCE  set to stop after the sample request instead of serving until Ctrl-C
#
# Ctrl-C, SIGTERM or SIGHUP (to this script, or SIGTERM to `make demo`) stop the servers it
# started and wait for them; so does the end of its parent (e.g. make killed otherwise).
set -euo pipefail

BIN=${BIN:-.venv/bin}
DIR=${DEMO_DIR:-demo}
PORT=${PORT:-2024}
logs=$(mktemp -d)
parent=$PPID
model_pid=
dev_pid=

stop_all() {
    trap '' INT TERM HUP # a second signal must not cut the clean-up short
    # The dev server first (it stops gracefully), then the model, then anything else.
    for pid in $dev_pid $model_pid $(jobs -p); do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $dev_pid $model_pid $(jobs -p); do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$logs"
}
trap stop_all EXIT
trap 'exit 0' INT TERM HUP

# Bash runs a trap only once the foreground command is done: long commands run in the
# background and are waited for, so that a signal stops them at once.
in_background() {
    "$@" <&0 &
    wait $!
}

# wait_for FILE PATTERN PID: until a line of FILE matches PATTERN (fails if PID exits).
wait_for() {
    for _ in $(seq 600); do
        if grep -q -- "$2" "$1" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$3" 2>/dev/null; then
            cat "$1" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "timed out waiting for: $2" >&2
    return 1
}

rm -rf "$DIR"
"$BIN/agentctl" init "$DIR"

echo
echo "== The scripted model (python -m agentctl.testing) stands in for OpenAI"
"$BIN/python" -m agentctl.testing --port 0 >"$logs/model.out" 2>&1 &
model_pid=$!
wait_for "$logs/model.out" "listening on" "$model_pid"
OPENAI_BASE_URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$logs/model.out")
OPENAI_API_KEY=scripted
export OPENAI_BASE_URL OPENAI_API_KEY
echo "OPENAI_BASE_URL=$OPENAI_BASE_URL OPENAI_API_KEY=$OPENAI_API_KEY"

port_in_use() {
    ! "$BIN/python" -c "import socket; socket.socket().bind(('127.0.0.1', $1))" 2>/dev/null
}
if [ "$PORT" != 0 ] && port_in_use "$PORT"; then
    echo "port $PORT is in use: using a free one"
    PORT=0
fi

echo
echo "== agentctl dev --config $DIR/agent.toml --port $PORT"
"$BIN/agentctl" dev --config "$DIR/agent.toml" --port "$PORT" > >(tee "$logs/dev.out") 2>&1 &
dev_pid=$!
wait_for "$logs/dev.out" "^  API   " "$dev_pid"
URL=$(sed -n 's/^  API   \(http[^ ]*\)$/\1/p' "$logs/dev.out")
NAME=$(sed -n 's/^Ready: agent "\([^"]*\)".*/\1/p' "$logs/dev.out")

echo
echo "== A run through the official langgraph-sdk client"
in_background "$BIN/python" - "$URL" "$NAME" <<'PYTHON'
import sys

from langgraph_sdk import get_sync_client

url, name = sys.argv[1:]
client = get_sync_client(url=url, api_key=None)
request = {"messages": [{"role": "user", "content": "hello"}]}
print(f"> get_sync_client(url={url!r}).runs.wait(None, {name!r}, input={request})")
result = client.runs.wait(None, name, input=request)
print("<", result["messages"][-1]["content"])
PYTHON

if [ -n "${DEMO_ONCE:-}" ]; then
    exit 0
fi
echo
echo "The agent keeps serving on $URL: open the web console at $URL/ui/, try the curl line"
echo "above, or edit $DIR/AGENTS.md and watch it reload. Press Ctrl-C to stop."
while kill -0 "$dev_pid" 2>/dev/null; do
    if ! kill -0 "$parent" 2>/dev/null; then
        exit 0 # whoever started us is gone: stop with it
    fi
    in_background sleep 1
done
wait "$dev_pid"
