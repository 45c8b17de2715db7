"""The settings registry: every environment variable `agentctl serve` (and `deploy`) reads,
with its type, default and meaning. `docs/settings.md`, the Dockerfile, compose.yaml and the
Kubernetes manifests are checked against it by the tests; add a setting here, nowhere else.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from agentctl.errors import SettingsError

Scope = Literal["serve", "deploy", "sandbox"]

log = logging.getLogger("agentctl.settings")
_warned: set[str] = set()  # deprecated variables already warned about


@dataclass(frozen=True)
class Setting:
    name: str  # the environment variable
    kind: type  # str, int, float or bool
    default: Any
    help: str
    scope: Scope = "serve"
    secret: bool = False  # never printed, logged or returned
    choices: tuple[str, ...] = ()
    # Earlier names of the variable, still read (with a warning) when it is not set.
    deprecated: tuple[str, ...] = ()
    zero: bool = False  # whether 0 is a value (a port: any free one; a limit: none)

    @property
    def field(self) -> str:
        """The attribute of `Settings` (or `SandboxSettings`) holding it."""
        prefix = "AGENTCTL_SANDBOX_" if self.scope == "sandbox" else "AGENTCTL_"
        return self.name.removeprefix(prefix).lower()


SETTINGS: tuple[Setting, ...] = (
    Setting("DATABASE_URL", str, None,
            "PostgreSQL URL (`postgresql://user:password@host:5432/db`). Unset: the embedded "
            "SQLite database in `AGENTCTL_DATA_DIR`, for a single replica."),
    Setting("REDIS_URL", str, None,
            "Redis URL (`redis://host:6379/0`) for event streams, wake-ups and cancellation "
            "across replicas. Required with `DATABASE_URL`."),
    Setting("PLATFORM_API_KEY", str, None,
            "The deployment key: `agentctl deploy` and operators send it as `x-api-key`. "
            "Required.", secret=True),
    Setting("AGENTCTL_HOST", str, "0.0.0.0", "The address to listen on."),
    Setting("AGENTCTL_PORT", int, 8000, "The port to listen on.", zero=True),
    Setting("AGENTCTL_FORWARDED_ALLOW_IPS", str, "127.0.0.1",
            "Comma-separated addresses of the proxies (load balancer, ingress) whose "
            "`X-Forwarded-For`/`-Proto` headers are trusted; `*` trusts any."),
    Setting("AGENTCTL_PUBLIC_URL", str, None,
            "The URL clients reach the deployment at (behind the load balancer); shown by "
            "`/info`, named by the A2A agent card and printed by `agentctl deploy`. Its pages "
            "(`/docs`, the console) opened there may call the API from a browser. Unset: the "
            "URL the request came to, never cached, and pages only at an IP address or "
            "localhost (see docs/server.md, Browsers and CORS). Required for agents with "
            "user-owned MCP servers: OAuth providers send users back to "
            "`<it>/agents/<name>/connections/callback` (docs/connections.md)."),
    Setting("AGENTCTL_CORS_ORIGINS", str, None,
            "Comma-separated origins (`https://chat.example.com`) whose web pages may call "
            "the API from a browser; `*` for any (then without credentials). Requests from "
            "other pages (a foreign `Origin`) are refused with 403. Unset: none."),
    Setting("AGENTCTL_DATA_DIR", str, ".agentctl/serve",
            "Where a replica unpacks revisions, and the SQLite database when there is no "
            "`DATABASE_URL`."),
    Setting("AGENTCTL_PRICES_FILE", str, None,
            "A TOML (or `.json`) file of models' prices in dollars per million tokens, "
            "taking precedence over the maintained table agentctl ships "
            "(`[\"openai:gpt-4o-mini\"] input = 0.15, output = 0.6, cached = 0.075`; "
            "`[\"ollama:*\"]` for every model of a provider). Unset: the table's prices; "
            "models it lacks (and local ones, like Ollama's) are unpriced (docs/usage.md)."),
    Setting("AGENTCTL_METERING", bool, True,
            "Count each run's tokens and store its usage and trace (docs/usage.md). Off: "
            "runs store no usage and no trace, and token and cost budgets count nothing; "
            "for measuring what metering costs, not for production."),
    Setting("AGENTCTL_MAX_RUNS", int, 256,
            "Runs one replica executes at once, at most; more wait, pending, for a free slot "
            "on any replica. A run mostly waits for its model, so hundreds fit (see "
            "docs/server.md, Admission). Formerly `AGENTCTL_WORKERS`, still read when this "
            "is unset.", deprecated=("AGENTCTL_WORKERS",)),
    Setting("AGENTCTL_MAX_LOOP_LAG_MS", float, 10.0,
            "Fewer runs start while the replica's event loop lags more than this (its mean "
            "lag over 0.2 s): past what the CPU gives, more runs at once only make every "
            "run's tokens late. `0`: up to `AGENTCTL_MAX_RUNS` whatever the lag (see "
            "docs/server.md, Admission).", zero=True),
    Setting("AGENTCTL_RUN_TIMEOUT_SECONDS", float, None,
            "A run still going after this long ends with status `timeout`. Unset: no limit."),
    Setting("AGENTCTL_LEASE_SECONDS", float, 30.0,
            "How long a replica holds a run without renewing it. A replica that dies loses "
            "its runs after this; another one resumes them from their last checkpoint."),
    Setting("AGENTCTL_SHUTDOWN_GRACE_SECONDS", float, 30.0,
            "On SIGTERM, how long in-flight runs may take to finish before the replica hands "
            "them to another one."),
    Setting("AGENTCTL_DEPLOY_WAIT_SECONDS", float, 30.0,
            "How long a deploy (or rollback) waits for every live replica to serve the new "
            "revision before it answers; `agentctl deploy` then names those that do not "
            "(exit 3). `0`: answer at once.",
            zero=True),
    Setting("AGENTCTL_MAX_BODY_MB", int, 10,
            "The largest request body (a run's input, a deployed revision) or WebSocket "
            "message, in MiB; a larger body is answered 413 before it is read."),
    Setting("AGENTCTL_MAX_REVISION_MB", int, 256,
            "The most a revision's files may be together, in MiB (a sparse file counts at its "
            "apparent size). `agentctl deploy` and `agentctl dev` refuse a larger project "
            "before reading its files, naming the largest; a replica refuses (413) an uploaded "
            "archive from its entries' headers, before unpacking it. Set it where `agentctl "
            "deploy` runs too."),
    Setting("AGENTCTL_MAX_REVISION_FILES", int, 5000,
            "The most files a revision may hold; checked as `AGENTCTL_MAX_REVISION_MB` is."),
    Setting("AGENTCTL_MAX_EVENT_MB", int, 8,
            "The largest streamed event a run may store and send, in MiB; a larger one (a "
            "`values` event of a huge state, say) is replaced by an `EventTooLarge` error in "
            "its place. A run's input or command, or a state update's values, over it is "
            "answered 413, and so are its metadata, config metadata and tags over 1/64 of it "
            "(they are repeated in every message chunk)."),
    Setting("AGENTCTL_MAX_INPUT_MESSAGES", int, 1000,
            "The most messages one request may send (a run's `input` or `command.update`, a "
            "state update); more are answered 413. The thread's earlier messages do not count."),
    Setting("AGENTCTL_MAX_SEARCH_SCAN", int, 10_000,
            "The most threads a `threads/search` or `threads/count` with a `values` filter "
            "reads; a filter that would read more is answered 422 (narrow it with `metadata`, "
            "`status` or `ids`)."),
    Setting("AGENTCTL_HEADER_TIMEOUT_SECONDS", float, 10.0,
            "A connection that has not sent a request's headers within this long (plain HTTP "
            "or a WebSocket handshake) is answered 408 and closed."),
    Setting("AGENTCTL_MAX_HEADER_KB", int, 64,
            "The most a request's headers may be, in KiB; larger ones are answered 431 and "
            "the connection closed. A WebSocket handshake also holds to the websockets "
            "library's limits (a line of 8 KiB, 128 headers)."),
    Setting("AGENTCTL_BODY_TIMEOUT_SECONDS", float, 60.0,
            "A request whose body has not arrived whole within this long (after its headers) "
            "is answered 408 and its connection closed."),
    Setting("AGENTCTL_WRITE_TIMEOUT_SECONDS", float, 60.0,
            "A client that reads nothing of what the server sends it (a response, a stream, "
            "a WebSocket) for this long is disconnected."),
    Setting("AGENTCTL_MAX_CONNECTIONS", int, 4096,
            "Open connections per replica, at most; a connection beyond is answered 503 and "
            "closed, and a warning is logged (at most every 10 s). The server raises its limit "
            "of open files (`ulimit -n`) to fit, as far as the hard limit allows."),
    Setting("AGENTCTL_SECRETS_KEY", str, None,
            "The key sealing deployed secrets and users' connection tokens at rest (any "
            "string without commas; a long random one). Several keys separated by commas "
            "rotate it: the first seals, every one opens (docs/connections.md, Key "
            "rotation). Unset: `PLATFORM_API_KEY` — then changing that key makes stored "
            "secrets unreadable until the project is deployed again, and users connect "
            "again; `agentctl dev` generates one into its data dir (`secrets.key`).",
            secret=True),
    Setting("AGENTCTL_WEBHOOK_SECRET", str, None,
            "The secret signing every webhook (docs/server.md, Webhooks): `whsec_` then the "
            "base64 of at least 16 random bytes, as Standard Webhooks libraries take it. Unset: "
            "derived from `PLATFORM_API_KEY` (`agentctl.webhooks.secret_for(key)` gives it).",
            secret=True),
    Setting("AGENTCTL_WEBHOOK_ALLOW_NETWORKS", str, None,
            "Comma-separated networks (`10.0.0.0/8,127.0.0.1`) webhooks may reach although "
            "they are not public. Unset: none — a webhook to a loopback, private, link-local, "
            "multicast or unspecified address (or a name resolving to one) is refused with "
            "422 (`agentctl dev` allows loopback)."),
    Setting("AGENTCTL_WEBHOOK_TIMEOUT_SECONDS", float, 10.0,
            "How long one webhook attempt waits for the receiver's answer."),
    Setting("AGENTCTL_WEBHOOK_ATTEMPTS", int, 5,
            "How many times a webhook is tried (after 1, 2, 4… s) while its receiver fails "
            "with 5xx, 408 or 429 or does not answer."),
    Setting("AGENTCTL_ALLOW_ANONYMOUS", bool, False,
            "For an agent without `[auth]`: let callers without the deployment key use the "
            "API. Default: every request needs `x-api-key`."),
    Setting("AGENTCTL_DB_POOL_SIZE", int, 20,
            "PostgreSQL connections per replica (per agent on a platform of several), at most: "
            "one stays open, more open under load and close after ten idle minutes."),
    Setting("AGENTCTL_REDIS_PREFIX", str, "agentctl",
            "Prefix of every Redis key and channel, to share one Redis between deployments."),
    Setting("AGENTCTL_EVENT_TTL_SECONDS", int, 7 * 24 * 3600,
            "How long a thread's streamed events stay replayable after its last event."),
    Setting("AGENTCTL_EVENT_FOLD_SECONDS", int, 0,
            "On the embedded store (`agentctl dev`), how long a run's token events stay as "
            "they were streamed once it ended; then they are folded into a compact form (a "
            "token's metadata kept once per thread) that replays exactly the same stream. "
            "0: stored compact as they come, as on Redis. A `values` event is always stored "
            "compact as it comes (each message kept once per thread).",
            zero=True),
    Setting("AGENTCTL_LOG_FORMAT", str, "json", "`json` (one object per line) or `text`.",
            choices=("json", "text")),
    Setting("AGENTCTL_LOG_LEVEL", str, "info",
            "`debug`, `info`, `warning` or `error`; `agentctl dev` reads it too. A run that "
            "fails on its model provider (a refused key, an endpoint out of reach, the "
            "provider's own error) is logged in one line; `debug` adds its traceback.",
            choices=("debug", "info", "warning", "error")),
    Setting("AGENTCTL_BUDGET_USER_TOKENS_PER_DAY", int, None,
            "Input and output tokens one user may use per UTC day, on every agent of the "
            "platform (each agent counts its own); with `[budgets]` in agent.toml, the "
            "stricter limit applies. A run that would start over it is refused with 429 "
            "(docs/budgets.md). Unset: no limit."),
    Setting("AGENTCTL_BUDGET_USER_COST_PER_DAY", float, None,
            "US dollars one user may spend per UTC day on each agent (priced models only); "
            "as `AGENTCTL_BUDGET_USER_TOKENS_PER_DAY`."),
    Setting("AGENTCTL_BUDGET_USER_RUNS_PER_MINUTE", int, None,
            "Runs one user may start per minute on each agent (the last 60 s); as "
            "`AGENTCTL_BUDGET_USER_TOKENS_PER_DAY`."),
    Setting("AGENTCTL_BUDGET_AGENT_TOKENS_PER_DAY", int, None,
            "Input and output tokens each agent may use per UTC day, all users together; as "
            "`AGENTCTL_BUDGET_USER_TOKENS_PER_DAY`."),
    Setting("AGENTCTL_BUDGET_AGENT_COST_PER_DAY", float, None,
            "US dollars each agent may spend per UTC day, all users together; as "
            "`AGENTCTL_BUDGET_USER_TOKENS_PER_DAY`."),
    Setting("AGENTCTL_BUDGET_AGENT_RUNS_PER_MINUTE", int, None,
            "Runs each agent may start per minute, all users together; as "
            "`AGENTCTL_BUDGET_USER_TOKENS_PER_DAY`."),
    Setting("OTEL_EXPORTER_OTLP_ENDPOINT", str, None,
            "An OTLP/HTTP collector (`http://collector:4318`): requests, runs and each run's "
            "model calls, tool calls, subagents and MCP calls are traced to it (docs/"
            "observability.md). Needs the `otel` extra. `agentctl dev` reads it too. Unset: "
            "no tracing."),
    Setting("OTEL_SERVICE_NAME", str, "agentctl", "The service name on exported traces."),
    Setting("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", bool, False,
            "Put what the model was sent and answered, and tools' arguments and results, on "
            "the spans of model and tool calls (`gen_ai.input.messages`, "
            "`gen_ai.output.messages`, `gen_ai.tool.call.arguments`…). Off: spans carry "
            "names, models, tokens and timings, never content. `agentctl dev` reads it too."),
    Setting("AGENTCTL_SANDBOX_URL", str, None,
            "The sandbox service every replica shares (`agentctl sandbox-server`), for agents "
            "with `[sandbox] provider = \"platform_sandbox\"`. Unset: sandboxes run inside "
            "this process (one replica, or `agentctl dev`).", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_DIR", str, None,
            "Where sandboxes keep their files. Unset: `sandboxes/` in the data folder.",
            scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_IMAGES_DIR", str, "/var/lib/agentctl/sandbox-images",
            "Prepared root filesystems: `[sandbox].image = \"python:3\"` uses the folder "
            "`python:3` in it (see docs/sandbox.md to build one).", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_TEMPLATES_DIR", str, "/var/lib/agentctl/sandbox-templates",
            "Prepared workspaces: a new sandbox's `/workspace` starts as a copy of the folder "
            "named by `[sandbox].template` in it.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_FALLBACK_IMAGE", str, "host",
            "The image used when the one asked for is not prepared: `host` (this machine's "
            "own `/usr`, read-only), another prepared image, or `none` to refuse.",
            scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_NETWORK", str, "none",
            "`none`: sandboxes have no network. `host`: they share this machine's.",
            scope="sandbox", choices=("none", "host")),
    Setting("AGENTCTL_SANDBOX_TIMEOUT_SECONDS", int, 300,
            "The longest one command may run (the agent may ask for less).", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_CPU_SECONDS", int, 120, "CPU time per sandboxed process.",
            scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_MEMORY_MB", int, 1024,
            "Memory of one sandbox: all its processes and its `/tmp` and `/dev/shm` together "
            "(a cgroup where one can be made, else watched by the service); also the address "
            "space of each process.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_DISK_MB", int, 2048,
            "Disk space of one sandbox's `/workspace`; a command taking it further is "
            "stopped, and a file upload that would is refused with 507.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_CGROUP", str, "auto",
            "`auto`: limit each sandbox's memory with a cgroup v2 under this process's own "
            "cgroup when its memory controller is delegated; `off`: never; or the path of a "
            "prepared cgroup v2 folder (writable, `memory` in its `cgroup.subtree_control`).",
            scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_PROCESSES", int, 128, "Processes one command may run at once.",
            scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_FILE_SIZE_MB", int, 1024,
            "The largest file a sandboxed command may write.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_OUTPUT_BYTES", int, 100_000,
            "Output of one command given to the agent; a command writing 16 times more is "
            "stopped.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_THREAD_TTL_SECONDS", int, 3600,
            "A thread's sandbox is removed after this long unused.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_ASSISTANT_TTL_SECONDS", int, 30 * 24 * 3600,
            "An assistant's sandbox is removed after this long unused.", scope="sandbox"),
    Setting("AGENTCTL_SANDBOX_UID", int, 65534,
            "When the server runs as root: the unprivileged user sandboxes run as.",
            scope="sandbox"),
    Setting("PLATFORM_URL", str, None,
            "Where `agentctl deploy` sends revisions: the deployment URL.", scope="deploy"),
)  # fmt: skip

BY_NAME = {setting.name: setting for setting in SETTINGS}


@dataclass(frozen=True)
class Settings:
    """The values of every `serve` setting, read once at start."""

    database_url: str | None
    redis_url: str | None
    platform_api_key: str | None
    host: str
    port: int
    forwarded_allow_ips: str
    public_url: str | None
    cors_origins: str | None
    data_dir: str
    prices_file: str | None
    metering: bool
    max_runs: int
    max_loop_lag_ms: float
    run_timeout_seconds: float | None
    lease_seconds: float
    shutdown_grace_seconds: float
    deploy_wait_seconds: float
    max_body_mb: int
    max_revision_mb: int
    max_revision_files: int
    max_event_mb: int
    max_input_messages: int
    max_search_scan: int
    header_timeout_seconds: float
    max_header_kb: int
    body_timeout_seconds: float
    write_timeout_seconds: float
    max_connections: int
    secrets_key: str | None
    webhook_secret: str | None
    webhook_allow_networks: str | None
    webhook_timeout_seconds: float
    webhook_attempts: int
    allow_anonymous: bool
    db_pool_size: int
    redis_prefix: str
    event_ttl_seconds: int
    event_fold_seconds: int
    log_format: str
    log_level: str
    budget_user_tokens_per_day: int | None
    budget_user_cost_per_day: float | None
    budget_user_runs_per_minute: int | None
    budget_agent_tokens_per_day: int | None
    budget_agent_cost_per_day: float | None
    budget_agent_runs_per_minute: int | None
    otel_exporter_otlp_endpoint: str | None
    otel_service_name: str
    otel_instrumentation_genai_capture_message_content: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read every setting from `env` (default: the process environment); `overrides`
        (by field name, e.g. from command-line options) win when not None."""
        return cls(**_read("serve", env, overrides))

    def describe(self) -> dict[str, Any]:
        """Every setting by variable name, secrets masked: safe to print or log."""
        shown: dict[str, Any] = {}
        for s in SETTINGS:
            if s.scope == "serve":
                value = getattr(self, s.field)
                shown[s.name] = "***" if s.secret and value else _without_password(value)
        return shown


@dataclass(frozen=True)
class SandboxSettings:
    """The platform sandbox's settings, read by `serve`, `dev` and `sandbox-server`."""

    url: str | None
    dir: str | None
    images_dir: str
    templates_dir: str
    fallback_image: str
    network: str
    timeout_seconds: int
    cpu_seconds: int
    memory_mb: int
    disk_mb: int
    cgroup: str
    processes: int
    file_size_mb: int
    output_bytes: int
    thread_ttl_seconds: int
    assistant_ttl_seconds: int
    uid: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> SandboxSettings:
        return cls(**_read("sandbox", env, overrides))


def _read(scope: Scope, env: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> Any:
    """The settings of `scope` from `env` (default: the process environment) by field name;
    `overrides` (e.g. from command-line options) win when not None."""
    env = os.environ if env is None else env
    values = {s.field: parse(s, raw_value(s, env)) for s in SETTINGS if s.scope == scope}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return values


def read(name: str, env: Mapping[str, str]) -> Any:
    """The value of the setting `name` in `env`."""
    setting = BY_NAME[name]
    return parse(setting, raw_value(setting, env))


def raw_value(setting: Setting, env: Mapping[str, str]) -> str | None:
    """The setting's value in `env`, under its name or, when that is unset, under a
    deprecated one (logged once per process)."""
    raw = env.get(setting.name)
    for old in setting.deprecated:
        if (raw is None or not raw.strip()) and env.get(old, "").strip():
            raw = env[old]
            if old not in _warned:
                _warned.add(old)
                log.warning("%s is deprecated: set %s instead", old, setting.name)
    return raw


def _without_password(value: Any) -> Any:
    """A URL with its password masked (`postgresql://user:***@host/db`); anything else as is."""
    if not isinstance(value, str) or "://" not in value:
        return value
    parts = urlsplit(value)
    if not parts.password:
        return value
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def parse(setting: Setting, raw: str | None) -> Any:
    if raw is None or raw.strip() == "":
        return setting.default
    raw = raw.strip()
    what = f"environment variable {setting.name}"
    if setting.kind is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{what}: expected true or false, got {raw!r}")
    if setting.kind in (int, float):
        try:
            number = setting.kind(raw)
        except ValueError:
            kind = "a whole number" if setting.kind is int else "a number"
            raise SettingsError(f"{what}: expected {kind}, got {raw!r}") from None
        if not math.isfinite(number):  # NaN would compare false with every value
            raise SettingsError(f"{what}: expected a finite number, got {raw!r}")
        if number < 0 or (number == 0 and not setting.zero):
            least = "0 or greater" if setting.zero else "greater than 0"
            raise SettingsError(f"{what}: must be {least}, got {raw!r}")
        return number
    if setting.choices and raw.lower() not in setting.choices:
        allowed = ", ".join(setting.choices)
        raise SettingsError(f"{what}: must be one of {allowed}, got {raw!r}")
    return raw.lower() if setting.choices else raw


def _check_registry() -> None:
    for cls, scope in ((Settings, "serve"), (SandboxSettings, "sandbox")):
        names = {f.name for f in fields(cls)}
        declared = {s.field for s in SETTINGS if s.scope == scope}
        assert names == declared, f"{cls.__name__} and SETTINGS disagree: {names ^ declared}"


_check_registry()
