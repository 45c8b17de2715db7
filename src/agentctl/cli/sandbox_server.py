"""`agentctl sandbox-server [--host HOST] [--port PORT]`: the platform sandbox service that
every replica of a deployment shares (`AGENTCTL_SANDBOX_URL`)."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agentctl.cli.dev import loop_factory, signals

if TYPE_CHECKING:
    from agentctl.settings import SandboxSettings

log = logging.getLogger("agentctl.sandbox")
DEFAULT_DIR = ".agentctl/sandboxes"


@click.command("sandbox-server")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8300, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on, 0 for any free one.")  # fmt: skip
def sandbox_server(host: str, port: int) -> None:
    """Run the sandbox service for agents with [sandbox] provider = "platform_sandbox", so
    that every replica uses the same sandboxes: start the replicas with
    AGENTCTL_SANDBOX_URL pointing here and the same PLATFORM_API_KEY.

    Needs bubblewrap (apt-get install bubblewrap). Sandboxes keep their files in
    AGENTCTL_SANDBOX_DIR (default .agentctl/sandboxes); limits and images are set by the
    AGENTCTL_SANDBOX_* variables (docs/settings.md, docs/sandbox.md).
    """
    from agentctl.errors import SettingsError
    from agentctl.observability.logs import configure_logging
    from agentctl.server.http import listen_socket
    from agentctl.settings import SandboxSettings, Settings

    settings = Settings.from_env()
    configure_logging(settings.log_format, settings.log_level)
    if not settings.platform_api_key:
        raise SettingsError(
            "PLATFORM_API_KEY is not set — the sandbox service accepts only callers sending "
            "it: set it to the key of the deployment's replicas"
        )
    sandbox_settings = SandboxSettings.from_env()
    sock = listen_socket(host, port)
    try:
        with signals(interrupt=lambda: True), asyncio.Runner(loop_factory=loop_factory()) as r:
            r.run(run(sandbox_settings, settings.platform_api_key, sock))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


async def run(settings: SandboxSettings, api_key: str, sock: socket.socket) -> None:
    from agentctl.errors import RuntimeFailure
    from agentctl.sandbox.http import sandbox_app
    from agentctl.sandbox.service import SandboxService
    from agentctl.server.http import NotifyingUvicorn, base_url, uvicorn_config

    service = SandboxService(settings, Path(settings.dir or DEFAULT_DIR))
    try:
        await service.start()  # fails here, clearly, where sandboxes cannot run
    except BaseException:
        await service.aclose()
        raise
    host, port = sock.getsockname()[:2]

    def started() -> None:
        log.info("sandbox service listening on %s, sandboxes in %s", base_url(host, port),
                 service.directory)  # fmt: skip

    async def stopping() -> None:
        log.info("stopping: commands still running end with the service")

    uv = NotifyingUvicorn(
        uvicorn_config(sandbox_app(service, api_key)), on_started=started, on_stopping=stopping
    )
    try:
        await uv.serve(sockets=[sock])
    except SystemExit:
        raise RuntimeFailure("the sandbox service could not start — see above") from None
