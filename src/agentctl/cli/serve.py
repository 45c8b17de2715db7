"""`agentctl serve [--host HOST] [--port PORT] [--max-runs N]`: the production server."""

from __future__ import annotations

import asyncio
import logging
import socket

import click

from agentctl.cli.deploy import API_KEY, BEARER, example_call
from agentctl.cli.dev import loop_factory, signals
from agentctl.settings import Settings

log = logging.getLogger("agentctl.serve")


@click.command()
@click.option("--host", default=None, help="Address to listen on [AGENTCTL_HOST, 0.0.0.0].")
@click.option("--port", default=None, type=click.IntRange(0, 65535),
              help="Port to listen on, 0 for any free one [AGENTCTL_PORT, 8000].")  # fmt: skip
@click.option("--max-runs", default=None, type=click.IntRange(min=1),
              help="Runs executed at once, at most [AGENTCTL_MAX_RUNS, 256].")  # fmt: skip
def serve(host: str | None, port: int | None, max_runs: int | None) -> None:
    """Run the production server: a platform of agents, each deployed with `agentctl
    deploy` and served at /agents/<name> (the LangGraph API, MCP and A2A; at the root too
    while there is exactly one agent).

    Settings come from environment variables (docs/settings.md): DATABASE_URL and REDIS_URL
    for any number of replicas on PostgreSQL + Redis (without them, one replica on SQLite in
    AGENTCTL_DATA_DIR), PLATFORM_API_KEY (required), AGENTCTL_MAX_RUNS and more. On SIGTERM
    runs in flight get AGENTCTL_SHUTDOWN_GRACE_SECONDS to finish; the rest are handed to
    another replica.
    """
    from agentctl.errors import SettingsError
    from agentctl.metering import prices
    from agentctl.observability.logs import configure_logging
    from agentctl.observability.tracing import configure_tracing, shutdown_tracing
    from agentctl.server.http import listen_socket

    settings = Settings.from_env(host=host, port=port, max_runs=max_runs)
    configure_logging(settings.log_format, settings.log_level)
    try:
        prices.configure(settings.prices_file)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    configure_tracing(
        settings.otel_exporter_otlp_endpoint,
        settings.otel_service_name,
        capture_content=settings.otel_instrumentation_genai_capture_message_content,
    )
    sock = listen_socket(settings.host, settings.port)
    try:
        with signals(interrupt=lambda: True), asyncio.Runner(loop_factory=loop_factory()) as r:
            r.run(run(settings, sock))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        shutdown_tracing()


async def run(settings: Settings, sock: socket.socket) -> None:
    from agentctl.errors import RuntimeFailure
    from agentctl.server.dispatch import open_platform
    from agentctl.server.heap import settle_heap
    from agentctl.server.http import NotifyingUvicorn, base_url, uvicorn_config
    from agentctl.server.limits import Limits

    platform, app = await open_platform(settings)
    host, port = sock.getsockname()[:2]
    url = base_url(host, port)

    def started() -> None:
        settle_heap()
        public = settings.public_url or url
        kind = platform.storage.kind
        if not platform.agents:
            log.info("listening on %s, on %s: no agent deployed yet — run "
                     "PLATFORM_URL=%s agentctl deploy", url, kind, public)  # fmt: skip
        for name, agent in sorted(platform.agents.items()):
            deployment = agent.server.deployment
            agent_url = f"{public}/agents/{name}"
            if not deployment.ready:
                log.info("agent %r at %s: no revision yet", name, agent_url)
                continue
            log.info("agent %r at %s: revision %s (%s), on %s", name, agent_url,
                     deployment.number, deployment.revision_id[:12], kind)  # fmt: skip
            header = BEARER if deployment.runtime.project.auth is not None else API_KEY
            log.info("try: %s", example_call(agent_url, deployment.graph_id, header))
        log.info("listening on %s; each agent's console: %s/agents/<name>/ui/", url, public)

    async def stopping() -> None:
        log.info("stopping: runs in flight get %s s to finish", settings.shutdown_grace_seconds)
        platform.begin_stopping()

    config = uvicorn_config(
        app,
        Limits.of(settings),
        timeout_graceful_shutdown=settings.shutdown_grace_seconds,
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
    )
    uv = NotifyingUvicorn(config, on_started=started, on_stopping=stopping)
    try:
        await uv.serve(sockets=[sock])
    except SystemExit:  # uvicorn's way of saying the application did not start
        raise RuntimeFailure("the server could not start — see the messages above") from None
    finally:
        if not uv.started:
            await platform.stop()
