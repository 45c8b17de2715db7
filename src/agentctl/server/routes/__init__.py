"""The routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from agentctl.server.routes import runs, streams

ROUTERS: list[APIRouter] = [runs.router, streams.router]
