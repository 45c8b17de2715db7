"""The routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from agentctl.server.routes import (
    a2a,
    agent,
    assistants,
    budgets,
    connections,
    console,
    crons,
    docs,
    mcp,
    operator,
    platform,
    protocol,
    runs,
    state,
    store,
    streams,
    system,
    threads,
    usage,
)

# Routes are matched in this order: the runs' first, as they are the busiest. No run path
# takes `crons` for a run id (`/threads/{id}/runs/{run_id}` has no POST).
ROUTERS: list[APIRouter] = [
    runs.router,
    threads.router,
    streams.router,
    protocol.router,
    state.router,
    assistants.router,
    crons.router,
    store.router,
    system.router,
    budgets.router,
    agent.router,
    mcp.router,
    connections.router,
    a2a.router,
    usage.router,
    platform.router,
    operator.router,
    console.router,
    docs.router,
]
