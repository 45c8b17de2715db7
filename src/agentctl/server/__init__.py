"""The agent server: the LangGraph Platform API over the run engine and a storage backend."""

from agentctl.server.app import Server, create_app

__all__ = ["Server", "create_app"]
