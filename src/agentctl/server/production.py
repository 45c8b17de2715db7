"""One agent of the platform `agentctl serve` runs: storage from the settings (PostgreSQL +
Redis for any number of replicas, or the embedded SQLite for one) in the agent's namespace,
revisions pushed by `agentctl deploy`, and callers admitted by the deployment key or the
revision's `[auth]`. `server/platform_host.py` hosts one per agent."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from agentctl.auth import authenticator_for
from agentctl.bundle.limits import RevisionLimits
from agentctl.engine import Deployment, RunEngine
from agentctl.engine.admission import max_lag_setting
from agentctl.engine.webhooks import Webhooks, WebhookSettings
from agentctl.errors import SettingsError
from agentctl.metering.budgets import operator_budgets
from agentctl.platform.deployments import Deployments
from agentctl.platform.secrets import SecretBox
from agentctl.project.model import Project
from agentctl.runtime.peers import Peers
from agentctl.sandbox import open_sandboxes
from agentctl.sealing import key_material
from agentctl.server.access import AccessPolicy
from agentctl.server.connections_factory import ConnectionsFactory
from agentctl.server.context import Server
from agentctl.server.limits import MIB, Limits
from agentctl.server.origins import OriginPolicy, parse_origins
from agentctl.server.public_url import origin_of, parse_public_url
from agentctl.settings import SandboxSettings, Settings
from agentctl.storage.namespace import Namespace
from agentctl.storage.open import open_storage


def serve_access(project: Project | None, settings: Settings) -> AccessPolicy:
    """The deployment key always admits the operator; end users sign in with the revision's
    `[auth]`, or, without it, are let in only when `AGENTCTL_ALLOW_ANONYMOUS` says so.
    The development UI bypass of `agentctl dev` never applies here."""
    key = settings.platform_api_key
    if project is None or project.auth is None:
        return AccessPolicy(api_key=key, anonymous=settings.allow_anonymous)
    return AccessPolicy(authenticator=authenticator_for(project.auth, project.env), api_key=key)


def check_platform_settings(settings: Settings) -> tuple[OriginPolicy, str]:
    """The pages that may call the platform (those of `AGENTCTL_CORS_ORIGINS`, and its own
    at `AGENTCTL_PUBLIC_URL`) and the deployment key; raises
    `SettingsError` for settings no agent of the platform can run with."""
    if not settings.platform_api_key:
        raise SettingsError(
            "PLATFORM_API_KEY is not set — the server needs the deployment key that "
            "`agentctl deploy` and operators send; set it to a long random string"
        )
    try:
        origins = parse_origins(settings.cors_origins)
    except ValueError as exc:
        raise SettingsError(f"environment variable AGENTCTL_CORS_ORIGINS: {exc}") from None
    own: frozenset[str] = frozenset()
    if settings.public_url:
        try:
            own = frozenset({origin_of(parse_public_url(settings.public_url))})
        except ValueError as exc:
            raise SettingsError(f"environment variable AGENTCTL_PUBLIC_URL: {exc}") from None
    return OriginPolicy(origins, own=own), settings.platform_api_key


async def open_agent_server(
    settings: Settings,
    namespace: str | None = None,
    agent: str | None = None,
    peers: Peers | None = None,
    incarnation: str | None = None,
) -> Server:
    """Open the storage of `namespace` (None: the default one), load the agent's active
    revision (if any) and return its server, ready to start. `agent` is the agent's name
    (shown by `/info`); `peers` the platform's other agents its mcp.json may name;
    `incarnation` its registration's, which names its sandboxes. Raises a `UserError` for
    settings or a stored revision this replica cannot use."""
    origins, key = check_platform_settings(settings)
    hooks = WebhookSettings.of(
        settings.webhook_secret,
        settings.webhook_allow_networks,
        api_key=key,
        timeout=settings.webhook_timeout_seconds,
        attempts=settings.webhook_attempts,
    )
    storage, close_storage = await open_storage(settings, namespace)
    data_dir = Path(settings.data_dir)
    own_dir = data_dir if namespace is None else Namespace.of(namespace).folder(data_dir)
    info: dict[str, object] = {"storage": storage.kind, "public_url": settings.public_url}
    if agent is not None:
        info["agent"] = agent
    try:
        deployment = Deployment(None)
        engine = RunEngine(
            storage,
            deployment,
            max_runs=settings.max_runs,
            max_lag=max_lag_setting(settings.max_loop_lag_ms),
            run_timeout=settings.run_timeout_seconds,
            lease=settings.lease_seconds,
            max_event_bytes=settings.max_event_mb * MIB,
            webhooks=Webhooks(hooks),
            budgets=operator_budgets(vars(settings)),
            metering=settings.metering,
        )
        server = Server(
            storage=storage,
            deployment=deployment,
            engine=engine,
            access=serve_access(None, settings),
            origins=origins,
            info=info,
            shutdown_grace=settings.shutdown_grace_seconds,
            limits=Limits.of(settings),
            on_close=[close_storage],
            sandboxes=open_sandboxes(SandboxSettings.from_env(), own_dir, key),
            peers=peers,
            incarnation=incarnation,
            connections=ConnectionsFactory(
                storage,
                key_material(settings.secrets_key, api_key=key),
                _public_base(settings.public_url, agent),
            ),
        )
        box = SecretBox(key_material(settings.secrets_key, api_key=key))
        deployments = Deployments(
            server,
            box,
            Path(settings.data_dir),
            access_for=lambda project: serve_access(project, settings),
            limits=RevisionLimits.of(settings),
        )
        server.deployments = deployments
        await deployments.restore()
    except BaseException:
        await storage.close()
        await close_storage()
        raise
    return server


def _public_base(public_url: str | None, agent: str | None) -> str | None:
    """Where browsers reach the agent: `AGENTCTL_PUBLIC_URL`, under `/agents/<name>` for an
    agent of the platform; None without it."""
    if not public_url:
        return None
    base = public_url.rstrip("/")
    return base if agent is None else f"{base}/agents/{quote(agent, safe='')}"
