"""The routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from agentctl.server.routes import (
    assistants,
    crons,
    runs,
    state,
    store,
    streams,
    system,
    threads,
)

# Crons come before runs so `/runs/crons/...` is never taken for a run id.
ROUTERS: list[APIRouter] = [
    system.router,
    assistants.router,
    threads.router,
    state.router,
    crons.router,
    store.router,
    runs.router,
    streams.router,
]
