"""Small real MCP servers for offline tests of agents that use MCP tools.

`calculator()` (tool `add`) and `library()` (tool `lookup`) are FastMCP servers; `serve(app)`
runs any ASGI app (e.g. `calculator().streamable_http_app()` or `library().sse_app()`) on
127.0.0.1 and a free port in a background thread.
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

from agentctl.testing.serving import serve

__all__ = ["Ledger", "calculator", "library", "serve"]


def calculator() -> FastMCP:
    server = FastMCP("calc", stateless_http=True, json_response=True, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


def library() -> FastMCP:
    server = FastMCP("library", log_level="WARNING")

    @server.tool()
    def lookup(topic: str) -> str:
        """Look a topic up in the library."""
        return f"the library says {topic} is well documented"

    return server


class Ledger:
    """An MCP server with a visible side effect: `record` appends to `entries`."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def server(self) -> FastMCP:
        server = FastMCP("ledger", stateless_http=True, json_response=True, log_level="WARNING")

        @server.tool()
        def record(entry: str) -> str:
            """Record an entry in the ledger."""
            self.entries.append(entry)
            return f"recorded {entry} as entry {len(self.entries)}"

        return server
