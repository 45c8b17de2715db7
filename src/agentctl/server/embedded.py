"""A server on the embedded SQLite storage: what `agentctl dev` runs, and what tests start."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from agentctl.auth import authenticator_for
from agentctl.bundle.dependencies import PLATFORM_API_KEY
from agentctl.engine import Deployment, RunEngine
from agentctl.engine.admission import DEFAULT_MAX_LAG
from agentctl.engine.webhooks import Webhooks, WebhookSettings
from agentctl.metering import prices
from agentctl.metering.budgets import operator_budgets, setting_name
from agentctl.project.model import BUDGET_KEYS, Budgets, Project
from agentctl.runtime import load_agent
from agentctl.sandbox import open_sandboxes
from agentctl.sealing import key_material
from agentctl.server.access import AccessPolicy
from agentctl.server.connections_factory import ConnectionsFactory
from agentctl.server.context import Server
from agentctl.server.limits import MIB, Limits
from agentctl.server.origins import OriginPolicy
from agentctl.settings import SandboxSettings, read
from agentctl.storage.base import Storage
from agentctl.storage.sqlite import SqliteStorage

DATABASE_FILE = "agentctl.db"
STORE_FILE = "store.db"


async def open_embedded_server(
    project: Project,
    revision_id: str,
    data_dir: Path,
    *,
    max_runs: int = 256,
    max_lag: float | None = DEFAULT_MAX_LAG,
    run_timeout: float | None = None,
    origins: OriginPolicy | None = None,
    storage: Storage | None = None,
    limits: Limits | None = None,
    webhooks: WebhookSettings | None = None,
    restarted_by: str = "the server",
    public_url: str | None = None,
) -> Server:
    """Load `project` as revision `revision_id` on the database in `data_dir` (created when
    missing), admitting callers as `agentctl dev` does (and web pages as `origins` says:
    by default, `agentctl dev`'s on 127.0.0.1). Raises a `UserError` when the agent cannot
    be loaded. `storage` replaces the SQLite database (it is closed with the server);
    `limits`: what one request may cost (by default, the default limits); `webhooks`: how
    runs' webhooks are delivered (by default, as the `AGENTCTL_WEBHOOK_*` variables of the
    project's environment say, loopback allowed); `restarted_by`: what starts it again,
    which resumes the runs a stop interrupted ("`agentctl dev`")."""
    access = dev_access(project)
    await asyncio.to_thread(prices.current)  # the prices file and table, read off the loop
    webhooks = webhooks or dev_webhooks(project.env)
    data_dir.mkdir(parents=True, exist_ok=True)
    if storage is None:
        storage = SqliteStorage(
            data_dir / DATABASE_FILE,
            data_dir / STORE_FILE,
            fold_after=read("AGENTCTL_EVENT_FOLD_SECONDS", project.env),
        )
    sandboxes = None
    connections = None
    try:
        key = await asyncio.to_thread(
            key_material, project.env.get("AGENTCTL_SECRETS_KEY"), data_dir=data_dir
        )
        connections = ConnectionsFactory(storage, key, public_url)
        sandboxes = open_sandboxes(
            SandboxSettings.from_env(), data_dir, project.env.get(PLATFORM_API_KEY)
        )
        runtime = await load_agent(
            project,
            revision_id,
            store=storage.store,
            checkpointer=storage.checkpointer,
            sandboxes=sandboxes,
            connections=connections.of(project),
        )
    except BaseException:
        if connections is not None:
            await connections.aclose()
        await storage.close()
        if sandboxes is not None:
            await sandboxes.aclose()
        raise
    deployment = Deployment(runtime)
    limits = limits or Limits()
    engine = RunEngine(
        storage,
        deployment,
        max_runs=max_runs,
        max_lag=max_lag,
        run_timeout=run_timeout,
        max_event_bytes=limits.max_event_mb * MIB,
        webhooks=Webhooks(webhooks),
        restarted_by=restarted_by,
        budgets=dev_budgets(project.env),
        metering=read("AGENTCTL_METERING", project.env),
    )
    return Server(
        storage=storage,
        deployment=deployment,
        engine=engine,
        access=access,
        origins=OriginPolicy.for_dev() if origins is None else origins,
        info={"storage": storage.kind, "revision": revision_id},
        sandboxes=sandboxes,
        limits=limits,
        connections=connections,
    )


def dev_webhooks(env: Mapping[str, str]) -> WebhookSettings:
    """How `agentctl dev` delivers webhooks: as the `AGENTCTL_WEBHOOK_*` variables of `env`
    say, and to loopback whatever they say (a receiver on the developer's machine)."""
    return WebhookSettings.of(
        read("AGENTCTL_WEBHOOK_SECRET", env),
        read("AGENTCTL_WEBHOOK_ALLOW_NETWORKS", env),
        api_key=env.get(PLATFORM_API_KEY),
        loopback=True,
        timeout=read("AGENTCTL_WEBHOOK_TIMEOUT_SECONDS", env),
        attempts=read("AGENTCTL_WEBHOOK_ATTEMPTS", env),
    )


def dev_budgets(env: Mapping[str, str]) -> Budgets:
    """The operator's budgets in `agentctl dev`: the `AGENTCTL_BUDGET_*` variables of `env`
    (the project's .env and the environment), as `serve` reads them."""
    names = [setting_name(key) for key in BUDGET_KEYS]
    return operator_budgets({name: read(name, env) for name in names})


def dev_access(project: Project) -> AccessPolicy:
    """`agentctl dev`'s policy: `[auth]` when the project has it, else anyone on the
    server's address; the development UI may bypass auth from loopback."""
    if project.auth is None:
        return AccessPolicy(anonymous=True, dev_ui=True)
    return AccessPolicy(authenticator=authenticator_for(project.auth, project.env), dev_ui=True)
