"""The agent server: the LangGraph Platform API over the run engine and a storage backend.

`context` holds the `Server` (the shared state), `services` what HTTP, MCP, A2A and the
thread-stream protocol do with it, `routes` the HTTP API over them, and `app` builds the
application."""
