#!/usr/bin/env bash
# `make demo`: run ./demo with `agentctl dev`, answered by the scripted OpenAI-compatible model
# of agentctl.testing, with a local identity provider signing in two users — no API key, no
# network. The first run scaffolds ./demo: `agentctl init`, plus what shows the rest of
# agentctl (see add_demo_files): a signed-in user with their own memory (`user/`), a subagent
# (`subagents/researcher/`) and an approval gate on write_file (`[interrupt_on]`). Later runs
# reuse it as it is, with your edits and its threads and memory (`.agentctl/data/`).
#
#   DEMO_DIR    the project (demo; kept between runs)
#   DEMO_RESET  set to delete DEMO_DIR first and scaffold it anew (`make demo-reset`)
#   PORT        port of the agent server (2024, or a free one when 2024 is taken; 0: any)
#   DEMO_ONCE   set to stop after the sample request instead of serving until Ctrl-C
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
idp_pid=
dev_pid=

stop_all() {
    trap '' INT TERM HUP # a second signal must not cut the clean-up short
    # The dev server first (it stops gracefully), then the model and the identity provider,
    # then anything else.
    for pid in $dev_pid $model_pid $idp_pid $(jobs -p); do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $dev_pid $model_pid $idp_pid $(jobs -p); do
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

# What `make demo` adds to `agentctl init`'s scaffold.
add_demo_files() {
    cat >>"$1/agent.toml" <<'TOML'

# Added by make demo: users sign in (the local identity provider that make demo starts), and
# a person approves every write_file call.
[auth]
provider = "idp_b"

[interrupt_on]
write_file = true
TOML
    mkdir -p "$1/user" "$1/subagents/researcher"
    cat >"$1/user/AGENTS.md" <<'MD'
# About the user

What the agent has learned about you. It reads this at the start of every conversation and
records what it learns here; edit it in the web console (Memory).

## Preferences
MD
    cat >"$1/subagents/researcher/agent.toml" <<'TOML'
[agent]
name = "researcher"
description = "Researches a topic and answers with the facts it found"
TOML
    cat >"$1/subagents/researcher/AGENTS.md" <<'MD'
You research the topic you are given and answer with the facts you found, briefly.
MD
}

if [ -n "${DEMO_RESET:-}" ]; then
    echo "== Deleting $DIR (its files, threads and memory) to start over"
    rm -rf "$DIR"
fi
if [ -e "$DIR/agent.toml" ]; then
    echo "== Reusing $DIR: your edits, threads and memory are kept (make demo-reset starts over)"
else
    "$BIN/agentctl" init "$DIR"
    add_demo_files "$DIR"
    echo "Added for the demo: [auth] and [interrupt_on] in agent.toml, user/AGENTS.md,"
    echo "subagents/researcher/agent.toml, subagents/researcher/AGENTS.md"
fi

echo
echo "== The scripted model (python -m agentctl.testing) stands in for OpenAI"
"$BIN/python" -m agentctl.testing --port 0 >"$logs/model.out" 2>&1 &
model_pid=$!
wait_for "$logs/model.out" "listening on" "$model_pid"
OPENAI_BASE_URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$logs/model.out")
OPENAI_API_KEY=scripted
export OPENAI_BASE_URL OPENAI_API_KEY
echo "OPENAI_BASE_URL=$OPENAI_BASE_URL OPENAI_API_KEY=$OPENAI_API_KEY"

echo
echo "== A local identity provider (python -m agentctl.testing.identity) signs users in"
"$BIN/python" -m agentctl.testing.identity --port 0 >"$logs/idp.out" 2>&1 &
idp_pid=$!
wait_for "$logs/idp.out" "^Press Ctrl-C" "$idp_pid"
IDP_B_SECRET_KEY=$(sed -n 's/^  IDP_B_SECRET_KEY=//p' "$logs/idp.out")
IDP_B_API_URL=$(sed -n 's/^  IDP_B_API_URL=//p' "$logs/idp.out")
ALICE=$(sed -n 's/^  alice  //p' "$logs/idp.out")
BOB=$(sed -n 's/^  bob    //p' "$logs/idp.out")
export IDP_B_SECRET_KEY IDP_B_API_URL
echo "IDP_B_API_URL=$IDP_B_API_URL IDP_B_SECRET_KEY=$IDP_B_SECRET_KEY (users alice and bob)"

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
echo "== A run as alice through the official langgraph-sdk client: a subagent, an approval"
echo "   gate and a memory write (the scripted model plays the @ lines of the message)"
in_background "$BIN/python" "$(dirname "$0")/demo_request.py" "$URL" "$NAME" "$ALICE"

echo
echo "User tokens, for the web console's sign-in (User token) or an Authorization: Bearer header:"
echo "  alice  $ALICE"
echo "  bob    $BOB"
if [ -n "${DEMO_ONCE:-}" ]; then
    exit 0
fi
echo
echo "The agent keeps serving on $URL: open the web console at $URL/ui/ and sign in as alice"
echo "(her thread with its subagent call and approval, her memory) or bob (he sees none of"
echo "hers); edit $DIR/AGENTS.md and watch it reload. Press Ctrl-C to stop."
while kill -0 "$dev_pid" 2>/dev/null; do
    if ! kill -0 "$parent" 2>/dev/null; then
        exit 0 # whoever started us is gone: stop with it
    fi
    in_background sleep 1
done
wait "$dev_pid"
