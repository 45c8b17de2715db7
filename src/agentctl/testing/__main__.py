"""Run the scripted model server: ``python -m agentctl.testing [--host H] [--port P]``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from agentctl.testing.server import API_KEY, DEFAULT_MODEL, ScriptedModelServer
from agentctl.testing.serving import StopSignals


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agentctl.testing",
        description=(
            "Scripted, stateless model server for offline tests, speaking the OpenAI, "
            "Anthropic and Ollama chat APIs."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to bind, 0 for any (8765)")
    parser.add_argument("--model", default=DEFAULT_MODEL, help=f"listed model ({DEFAULT_MODEL})")
    parser.add_argument(
        "--no-keep-alive", action="store_true", help="answer with Connection: close"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")

    server = ScriptedModelServer(
        args.host, args.port, model=args.model, keep_alive=not args.no_keep_alive
    )
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    stop = StopSignals()
    try:
        print(
            f"Scripted model server listening on {server.base_url}\n"
            "Point langchain-openai (or the openai SDK) at it:\n"
            f"  export OPENAI_BASE_URL={server.base_url}\n"
            f"  export OPENAI_API_KEY={API_KEY}\n"
            f'  then use the model "openai:{server.model}" (any model name works).\n'
            "It speaks Anthropic's and Ollama's chat APIs too:\n"
            f"  export ANTHROPIC_BASE_URL={server.url} ANTHROPIC_API_KEY={API_KEY}"
            f'  # "anthropic:{server.model}"\n'
            f'  export OLLAMA_HOST={server.url}  # "ollama:{server.model}"\n'
            "Script the replies with @say / @call / @fail lines in the user message.\n"
            "Press Ctrl-C to stop.",
            flush=True,
        )
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    print("Stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
