"""Liveness, server facts and Prometheus metrics."""

from __future__ import annotations

import asyncio
import importlib.metadata
from typing import Any

from fastapi import APIRouter, Request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Gauge,
    Info,
    gc_collector,
    generate_latest,
    platform_collector,
    process_collector,
)
from starlette.responses import PlainTextResponse, Response

from agentctl._version import __version__
from agentctl.engine.executor import STRICT_RESUME_KEY
from agentctl.observability.metrics import Metrics
from agentctl.server import lookup, views
from agentctl.server.access import caller_of
from agentctl.server.context import Server, server_of
from agentctl.server.openapi import UNAVAILABLE
from agentctl.server.public_url import Located, agent_url
from agentctl.server.readiness import readiness
from agentctl.server.schemas import OkOut
from agentctl.storage.base import (
    ACTIVE_RUN_STATUSES,
    FINAL_RUN_STATUSES,
    AssistantFilter,
    CronFilter,
    Page,
    ThreadFilter,
    ThreadStatus,
)

router = APIRouter(tags=["system"])

THREAD_STATUSES: tuple[ThreadStatus, ...] = ("idle", "busy", "interrupted", "error")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


@router.get("/ok", response_model=OkOut, responses=UNAVAILABLE)
async def ok(request: Request, live: bool = False) -> Response:
    """Readiness: 503 once the server is stopping (draining its runs) or while PostgreSQL
    or Redis does not answer, so a load balancer sends new requests elsewhere meanwhile.
    `?live=true` is liveness: 200 for as long as the process answers at all, so an outage
    of a service does not get the replicas restarted."""
    server = server_of(request)
    return await readiness(server.storage, server.stopping_since is not None, live)


@router.get("/info", response_model=dict[str, Any])
async def info(request: Request) -> Response:
    server = server_of(request)
    deployment = server.deployment
    ready = deployment.ready
    access = server.access
    agent = server.info.get("agent")  # the agent's name, on a platform
    located: Located | None = None
    if agent is not None:
        located = agent_url(request, agent, server.info.get("public_url"))
    own = {} if located is None else {"url": located.url}
    return views.json_response(
        {
            **server.info,
            **own,
            "version": __version__,
            "langgraph_py_version": _version("langgraph"),
            "graph": deployment.graph_id if ready else None,
            "assistant_id": deployment.assistant_id if ready else None,
            "revision": deployment.revision_id if ready else None,
            "revision_number": deployment.number,
            # What the web console offers at sign-in, and whether it shows the deploys.
            "credentials": {
                "bearer": access.authenticator is not None,
                "api_key": access.api_key is not None,
                "anonymous": access.anonymous,
                "oidc": server.browser_sign_in(),
            },
            "deploys": server.deployments is not None,
            "flags": {
                "assistants": True,
                "crons": True,
                "store": True,
                "langsmith": False,
                # Runs honour `strict_resume` (the SDKs look for it here).
                "strict_resume": STRICT_RESUME_KEY is not None,
            },
        },
        headers=None if located is None else located.cache_headers(),
    )


class StoredGauges:
    """Gauges of what storage holds, refreshed at each scrape, in the app's registry (never
    the global one) beside the run, stream and HTTP metrics of `observability.metrics`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.info = Info("agentctl", "The agent server and the revision it serves",
                         registry=self.registry)  # fmt: skip
        self.runs = Gauge("agentctl_runs", "Runs stored, by status", ["status"],
                          registry=self.registry)  # fmt: skip
        self.threads = Gauge("agentctl_threads", "Threads stored, by status", ["status"],
                             registry=self.registry)  # fmt: skip
        self.assistants = Gauge("agentctl_assistants", "Assistants stored",
                                registry=self.registry)  # fmt: skip
        self.crons = Gauge("agentctl_crons", "Crons stored, by whether they are enabled",
                           ["enabled"], registry=self.registry)  # fmt: skip
        self.max_runs = Gauge("agentctl_max_runs", "Runs this replica executes at once at most",
                              registry=self.registry)  # fmt: skip
        self.admission_limit = Gauge(
            "agentctl_run_admission_limit",
            "Runs this replica executes at once now: at most agentctl_max_runs, fewer while "
            "its event loop lags",
            registry=self.registry,
        )
        self.loop_lag = Gauge(
            "agentctl_event_loop_lag_seconds",
            "How late this replica's event loop runs a timer, averaged over the last 0.2 s",
            registry=self.registry,
        )

    async def refresh(self, server: Server, observed: Metrics) -> None:
        storage = server.storage
        self.info.info(
            {
                "version": __version__,
                "graph": server.deployment.graph_id,
                "revision": server.deployment.revision_id,
            }
        )
        counts = await run_counts(server)
        for status, count in counts.items():
            self.runs.labels(status=status).set(count)
        observed.run_queue_depth.set(counts["pending"])
        for status in THREAD_STATUSES:
            _, total = await storage.threads.search(ThreadFilter(status=status), Page(limit=1))
            self.threads.labels(status=status).set(total)
        _, assistants = await storage.assistants.search(AssistantFilter(), Page(limit=1))
        self.assistants.set(assistants)
        for enabled in (True, False):
            _, crons = await storage.crons.search(CronFilter(enabled=enabled), Page(limit=1))
            self.crons.labels(enabled=str(enabled).lower()).set(crons)
        self.max_runs.set(server.engine.max_runs)
        self.admission_limit.set(server.engine.admission.limit)
        self.loop_lag.set(server.engine.admission.lag)


async def run_counts(server: Server) -> dict[str, int]:
    """Runs stored, by status (every status present, 0 when none)."""
    counts: dict[str, int] = dict.fromkeys((*ACTIVE_RUN_STATUSES, *FINAL_RUN_STATUSES), 0)
    counts.update(await server.storage.runs.count_by_status())
    return counts


def _add_runtime_collectors(registry: CollectorRegistry) -> None:
    process_collector.ProcessCollector(registry=registry)
    platform_collector.PlatformCollector(registry=registry)
    gc_collector.GCCollector(registry=registry)


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> Response:
    lookup.require_operator(caller_of(request), "read the metrics")
    state = request.app.state
    observed: Metrics = state.metrics  # made by `create_app`
    if getattr(state, "stored_gauges", None) is None:
        state.stored_gauges = StoredGauges(observed.registry)  # no await: made once
        # The process collector reads /proc: off the event loop.
        await asyncio.to_thread(_add_runtime_collectors, observed.registry)
    stored: StoredGauges = state.stored_gauges
    await stored.refresh(server_of(request), observed)
    text = await asyncio.to_thread(generate_latest, observed.registry)
    return Response(text, media_type=CONTENT_TYPE_LATEST)
