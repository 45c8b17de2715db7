"""Every error agentctl raises on purpose.

The tree separates a user's mistakes (fixable by editing the project, the settings or the
request) from failures of the running system::

    AgentctlError                 status 500: the base; never raised itself
    ├── UserError                 status 400: something the user can fix; the message says how
    │   ├── ConfigError           status 422: a project that fails validation (every Problem)
    │   ├── MissingEnvError       environment variables the project needs are not set
    │   ├── ProjectExistsError    `init` would overwrite files (without --force)
    │   ├── SettingsError         a setting's variable holds a value of the wrong kind
    │   ├── PortInUseError        something else listens where `agentctl dev` would
    │   ├── McpLoadError          an MCP server could not be listed when a revision loaded
    │   │   └── PeerUnavailable   an agent mcp.json names is not served on the platform (yet)
    │   ├── MissingPackageError   a package the revision needs is not installed
    │   ├── OlderPlatform         the `agentctl serve` reached lacks a route the CLI needs
    │   └── RequestError          a request the server refuses (MCP and A2A relay these)
    │       ├── BadRequest        status 400: a request the server cannot read
    │       │   ├── FilterError   a thread-stream subscription to fix
    │       │   ├── CommandError  a protocol command refused, with its protocol error code
    │       │   └── ConsentRefused  a connection's authorization callback or link refused
    │       ├── Forbidden         status 403: the caller may not do this
    │       ├── NotFound          status 404: no such resource (for this caller)
    │       │   └── SandboxNotFound
    │       ├── Conflict          status 409: the resource's state forbids it now
    │       │   ├── SandboxBusy
    │       │   └── ThreadBusyError
    │       ├── ContentTooLarge   status 413: more than a limit allows
    │       │   └── RevisionTooLarge
    │       ├── BudgetExceeded    status 429: a budget of the user or the agent is spent
    │       └── Unprocessable     status 422: a value the server refuses
    │           ├── RevisionRefused
    │           └── SandboxRefused
    ├── AuthError                 status 401: a missing, invalid, expired or forged token
    │   └── WebhookVerificationError  a webhook whose signature does not check out
    └── RuntimeFailure            status 500: the system failed; not the user's fault
        ├── AuthUnavailable       status 503: the identity provider could not say yes or no
        ├── RedisUnavailable      status 503: no Redis answers at REDIS_URL
        ├── NotDeployed           status 503: no revision deployed yet
        ├── NotServedEverywhere   exit 3: a deploy is active, but some live replicas do not serve it
        ├── SandboxUnavailable    status 503: this machine cannot run sandboxes
        ├── SandboxFull           status 507: no disk space left for a write
        ├── DiskUnavailable       status 503: the embedded database's disk is full (or failing)
        ├── SecretsUnreadable     stored secrets do not open with this server's key
        ├── ConnectionFailed      status 502: an MCP server or its authorization server failed
        ├── CgroupError           cgroups cannot be used here
        └── ModelProviderError    status 502: a call to the agent's model provider failed

Each class carries the HTTP `status` the server answers with (`{"detail": <message>}`, from
`agentctl.server.errors`, the one place that answers errors) and the CLI `exit_code`. The
CLI prints `error: <message>` and exits with `exit_code`; never a traceback.
`OUTSIDE_THE_TREE` names the few exception classes kept out of it on purpose, and why.
docs/errors.md is generated from this module (`scripts/gen_errors_doc.py`).

This module is a leaf: it imports nothing from agentctl, so every layer can raise these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a project, located by file and key."""

    file: str
    key: str
    message: str
    fix: str
    rule: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}: " if self.key else f"{self.file}: "
        return f"{where}{self.message} — {self.fix}"


# Exception classes of agentctl deliberately outside the tree (module.Class: why), checked
# by tests/test_errors.py and listed in docs/errors.md.
OUTSIDE_THE_TREE = {
    "agentctl.server.blocking.BlockingCallError": (
        "a `blockbuster.BlockingError` (its hooks raise it), reporting a blocking call on the "
        "event loop of `agentctl dev`: a bug in the agent's code, so a request that meets one "
        "is answered and logged as an unexpected error (500), the run fails with its message"
    ),
    "agentctl.runtime.peers.PeerRefused": (
        "a langchain `ToolException` (the tool layer shows it to the model): an in-process "
        "call to another agent of the platform that agent would not admit; the run goes on"
    ),
    "agentctl.engine.egress.Refused": (
        "a `ValueError`: a webhook URL the server may not send to, which the run and cron "
        "services answer as `Unprocessable` (422 `webhook: …`) and deliveries count as refused"
    ),
    "agentctl.engine.egress.Unresolved": (
        "an `egress.Refused` for a host name that resolves to nothing yet: accepted at "
        "submit time, retried by deliveries"
    ),
    "agentctl.connections.mcp_client.Unauthorized": (
        "not an error the user sees: a user-owned MCP server answered 401 to a user's token; "
        "the connection refreshes the token and tries once more, else asks for consent"
    ),
    "agentctl.connections.oauth.GrantRefused": (
        "not an error the user sees: the authorization server refused a refresh token for "
        "good (invalid_grant, invalid_client, unauthorized_client); the connection is removed "
        "and the user is asked to consent again"
    ),
    "agentctl.connections.sealing.Unreadable": (
        "not an error the user sees: a sealed token no configured key opens (the key "
        "changed); the connection counts as absent and the user is asked to consent again"
    ),
    "agentctl.server.connections.CutShort": (
        "not an error: a response body raises it to close its connection before the body is "
        "whole (a `wait` of a run the server's stop handed back), so that the client "
        "reconnects; nothing logs it"
    ),
    "agentctl.testing.script.ScriptError": (
        "the scripted model test kit: a malformed directive line, answered in the fake "
        "provider's own error format, never by agentctl's server or CLI"
    ),
    "agentctl.testing.wire.WireError": (
        "the scripted model test kit: a request body off the provider's wire format, "
        "answered in that provider's own error format"
    ),
    "agentctl.testing.services.ServiceUnavailable": (
        "the test and benchmark kit: no PostgreSQL or Redis to test against, and no "
        "packages to start a throwaway one"
    ),
    "agentctl.testing.oauth_provider.SignInError": (
        "the OAuth provider test kit: its sign-in page did not send the browser back (a wrong "
        "password, an unknown request), raised to the test driving the page, never by "
        "agentctl's server or CLI"
    ),
}

# Exit codes of the CLI for what is not an AgentctlError (which exits with its `exit_code`).
EXIT_INTERNAL = 70  # an unexpected exception: a bug in agentctl (EX_SOFTWARE of sysexits.h)
EXIT_INTERRUPTED = 130  # Ctrl-C, or an answer to a prompt aborted (128 + SIGINT)


class AgentctlError(Exception):
    """Base of every error agentctl raises on purpose; never raised itself."""

    exit_code = 1
    status = 500


class UserError(AgentctlError):
    """A mistake the user can fix; the message says how."""

    status = 400


class ConfigError(UserError):
    """The project is invalid. Holds every problem found, not just the first."""

    status = 422

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class MissingEnvError(UserError):
    """Environment variables the project needs are not set."""

    def __init__(self, missing: Mapping[str, str]) -> None:
        """`missing` maps each variable name to what needs it."""
        self.names = sorted(missing)
        listed = ", ".join(f"{name} (for {missing[name]})" for name in self.names)
        super().__init__(
            f"missing environment variables: {listed} — set them in the project's .env "
            "or in the environment"
        )


class ProjectExistsError(UserError):
    """`agentctl init` found files it would overwrite."""

    def __init__(self, existing: Sequence[str]) -> None:
        self.existing = list(existing)
        super().__init__(
            "these files already exist: "
            + ", ".join(self.existing)
            + " — pass --force to overwrite them, or choose another folder"
        )


class SettingsError(UserError):
    """An environment variable of a setting holds a value of the wrong kind."""


class PortInUseError(UserError):
    """Something else listens on the address `agentctl dev` was asked to use."""


class McpLoadError(UserError):
    """An MCP server could not be reached or listed when the revision was loaded."""


class PeerUnavailable(McpLoadError):
    """An agent the revision's mcp.json names is not served on this platform (yet)."""


class MissingPackageError(UserError):
    """A package the revision needs is not installed on this server."""


class OlderPlatform(UserError):
    """The `agentctl serve` at PLATFORM_URL is older than the CLI: it lacks a route a
    command needs (e.g. it hosts one agent and has no `/platform/agents`)."""


class RequestError(UserError):
    """A request the server refuses; never raised itself. HTTP answers it with its status;
    MCP and A2A relay it as a failed tool call or task, the thread protocol as an error."""


class BadRequest(RequestError):
    """A request the server cannot read: not JSON, or not the shape the endpoint takes."""

    status = 400


class FilterError(BadRequest):
    """A thread-stream subscription the client must fix; the message says how."""


class CommandError(BadRequest):
    """A protocol command the server refuses; `code` is one of the protocol's error codes
    (the command's answer carries it, not an HTTP status)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConsentRefused(BadRequest):
    """A step of connecting a user's account to an MCP server refused: a forged, replayed or
    expired `state`, a link already used, a browser that did not start the flow (its binding
    cookie missing or wrong), or the provider's own refusal (`error=` on the callback). The
    message says which, and that the user starts the connection again."""


class Forbidden(RequestError):
    """The caller is known but may not do this: another user's store namespace, or an
    operator's action without the deployment key."""

    status = 403


class NotFound(RequestError):
    """No such resource, or none the caller may see (another user's is not found either)."""

    status = 404


class SandboxNotFound(NotFound):
    """No sandbox of that name on the sandbox service."""


class Conflict(RequestError):
    """The resource's state forbids the request now: it exists already, or is busy."""

    status = 409


class SandboxBusy(Conflict):
    """A sandbox cannot be deleted while one of its commands runs."""


class ThreadBusyError(Conflict):
    """`multitask_strategy: reject` on a thread with a run in flight."""


class ContentTooLarge(RequestError):
    """A request holding more than a limit of the server allows (e.g. input messages)."""

    status = 413


class RevisionTooLarge(ContentTooLarge):
    """A revision archive whose files are larger, or more, than a revision may hold
    (`AGENTCTL_MAX_REVISION_MB`, `AGENTCTL_MAX_REVISION_FILES`), refused from its entries'
    headers before their data is read."""


class BudgetExceeded(RequestError):
    """A budget of `[budgets]` (or the operator's `AGENTCTL_BUDGET_*`) is spent: a run that
    would start over it is refused (429, with `Retry-After`: the seconds until its window
    frees), and a run that crosses it stops before its next model call (its `error` event).
    The message names the budget, its limit, the use and when it resets."""

    status = 429

    def __init__(self, message: str, *, budget: str = "", retry_after: int = 60) -> None:
        super().__init__(message)
        self.budget = budget
        self.retry_after = max(1, retry_after)  # seconds

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class Unprocessable(RequestError):
    """A request the server can read but whose values it refuses; the message names the
    value and what to send instead."""

    status = 422


class RevisionRefused(Unprocessable):
    """An uploaded revision this server cannot serve; the message says what to do."""


class SandboxRefused(Unprocessable):
    """A sandbox that cannot be made as asked: an image or template not prepared here."""


class AuthError(AgentctlError):
    """The request's token does not prove who the caller is: missing, malformed, expired,
    revoked or forged. The message says what is wrong and never echoes the token."""

    status = 401


class WebhookVerificationError(AuthError):
    """A webhook's signature does not prove the server sent it (`agentctl.webhooks.verify`,
    for receivers): a header missing, a timestamp too old, or no signature matching."""


class RuntimeFailure(AgentctlError):
    """The system failed in a way the user did not cause."""


class AuthUnavailable(RuntimeFailure):
    """The identity provider did not answer, answered nonsense, or refused the server's own
    credentials. The token may be fine; a request is refused (never let through) until the
    provider answers again."""

    status = 503


class RedisUnavailable(RuntimeFailure):
    """`REDIS_URL` is malformed or no Redis answers there (checked when a server starts)."""

    status = 503


class NotDeployed(RuntimeFailure):
    """A production server before its first `agentctl deploy`."""

    status = 503

    def __init__(self) -> None:
        super().__init__(
            "no revision is deployed on this server yet — run `agentctl deploy` with "
            "PLATFORM_URL set to this server's URL"
        )


class NotServedEverywhere(RuntimeFailure):
    """`agentctl deploy` or `rollback`: the revision is active, but some live replicas did
    not serve it within `AGENTCTL_DEPLOY_WAIT_SECONDS` (a client behind the load balancer
    may still reach the one before there); the message names them and why."""

    exit_code = 3


class SandboxUnavailable(RuntimeFailure):
    """The machine cannot run sandboxes (no bubblewrap, no user namespaces, ...)."""

    status = 503


class SandboxFull(RuntimeFailure):
    """No room for a write: the sandbox's disk limit, or the disk of the service itself."""

    status = 507


class DiskUnavailable(RuntimeFailure):
    """The disk holding the embedded database (`agentctl dev`, `agentctl serve` without
    DATABASE_URL) is full or cannot be written: an outage of that store. What runs in flight
    write waits in memory and is stored once the disk has room; a request that must write
    is refused meanwhile (503 with `Retry-After`), and a start that must write stops here."""

    status = 503

    def __init__(self, service: str, condition: str, consequence: str | None = None) -> None:
        """`service`: "the disk holding <folder>"; `condition`: "is full", ...;
        `consequence`: what it means for the caller (by default, for a request)."""
        consequence = consequence or "so the request was not carried out — free space on it"
        super().__init__(f"{service} {condition}, {consequence}")
        self.service = service
        self.condition = condition


class SecretsUnreadable(RuntimeFailure):
    """Stored secrets cannot be decrypted with this server's key."""


class ConnectionFailed(RuntimeFailure):
    """A user-owned MCP server, or its OAuth authorization server, failed a step of a
    connection: discovery, client registration, the code exchange, a refresh, or listing
    tools. The message names the server, the URL and the step, never a token or secret."""

    status = 502


class CgroupError(RuntimeFailure):
    """Cgroups cannot be used here; the message says why. The sandbox service then watches
    memory from outside, unless a cgroup was asked for by path."""


class ModelProviderError(RuntimeFailure):
    """A call to the agent's model provider failed: it refused the key, could not be
    reached, or answered an error of its own. The run ends with it (its `error` event);
    the message names the provider, the URL called and what to check, never the key."""

    status = 502


__all__ = [
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "OUTSIDE_THE_TREE",
    "AgentctlError",
    "AuthError",
    "AuthUnavailable",
    "BadRequest",
    "BudgetExceeded",
    "CgroupError",
    "CommandError",
    "ConfigError",
    "Conflict",
    "ContentTooLarge",
    "DiskUnavailable",
    "FilterError",
    "Forbidden",
    "McpLoadError",
    "MissingEnvError",
    "MissingPackageError",
    "ModelProviderError",
    "NotDeployed",
    "NotFound",
    "NotServedEverywhere",
    "OlderPlatform",
    "PortInUseError",
    "Problem",
    "ProjectExistsError",
    "RedisUnavailable",
    "RequestError",
    "RevisionRefused",
    "RuntimeFailure",
    "SandboxBusy",
    "SandboxFull",
    "SandboxNotFound",
    "SandboxRefused",
    "SandboxUnavailable",
    "SecretsUnreadable",
    "SettingsError",
    "ThreadBusyError",
    "Unprocessable",
    "UserError",
]
