"""The typed model of an agent project, as the loader produces it after validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SandboxProvider = Literal["none", "sandbox_a", "sandbox_b", "sandbox_c", "platform_sandbox"]
SandboxScope = Literal["thread", "assistant"]
AuthProvider = Literal["idp_a", "idp_b", "oidc"]
McpTransport = Literal["http", "sse"]

SANDBOX_PROVIDERS: tuple[SandboxProvider, ...] = (
    "none",
    "sandbox_a",
    "sandbox_b",
    "sandbox_c",
    "platform_sandbox",
)
SANDBOX_SCOPES: tuple[SandboxScope, ...] = ("thread", "assistant")
AUTH_PROVIDERS: tuple[AuthProvider, ...] = ("idp_a", "idp_b", "oidc")
Decision = Literal["approve", "edit", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "edit", "reject")


@dataclass(frozen=True)
class SandboxConfig:
    provider: SandboxProvider = "none"
    template: str = "agent-deploy"
    image: str = "python:3"
    scope: SandboxScope = "thread"

    @property
    def enabled(self) -> bool:
        return self.provider != "none"


@dataclass(frozen=True)
class AuthConfig:
    """`[auth]`. `issuer` and `audience` are set for `provider = "oidc"` only (and required);
    so is `client_id`, optional: the public client the web console signs in with."""

    provider: AuthProvider
    issuer: str | None = None
    audience: str | None = None
    client_id: str | None = None


BUDGET_KEYS: tuple[str, ...] = (
    "user_tokens_per_day",
    "user_cost_per_day",
    "user_runs_per_minute",
    "agent_tokens_per_day",
    "agent_cost_per_day",
    "agent_runs_per_minute",
)


@dataclass(frozen=True)
class Budgets:
    """`[budgets]`: what each user, and the agent as a whole, may spend (None: no limit).
    Tokens are input + output tokens of every model call, costs are in USD, days are UTC
    days; runs per minute count the runs started in the last 60 seconds."""

    user_tokens_per_day: int | None = None
    user_cost_per_day: float | None = None
    user_runs_per_minute: int | None = None
    agent_tokens_per_day: int | None = None
    agent_cost_per_day: float | None = None
    agent_runs_per_minute: int | None = None


@dataclass(frozen=True)
class ApprovalGate:
    """A tool call that pauses the run until a person decides."""

    allowed_decisions: tuple[Decision, ...]


@dataclass(frozen=True)
class McpOAuth:
    """`oauth` of a user-owned MCP server: each user connects their own account. Without
    `client_id`, the client registers itself (RFC 7591). `client_id` and `client_secret`
    keep their `${VAR}` references (`client_secret` is always one)."""

    scopes: tuple[str, ...] = ()
    client_id: str | None = None
    client_secret: str | None = None


@dataclass(frozen=True)
class McpServer:
    """One remote MCP server. `url` and `headers` keep their `${VAR}` references. `agent`:
    the agent of the same platform it is, called in-process there; `url` ("" when not
    given) reaches it elsewhere. `oauth`: set for a user-owned server (called with the
    token of the run's user), None for an agent-owned one (called with `headers`)."""

    name: str
    transport: McpTransport
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    env_names: tuple[str, ...] = ()
    agent: str | None = None
    description: str | None = None
    oauth: McpOAuth | None = None

    @property
    def user_owned(self) -> bool:
        return self.oauth is not None


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str  # folder relative to the project root, e.g. "skills/review"
    files: tuple[str, ...]  # every bundled file, relative to the project root


@dataclass(frozen=True)
class Subagent:
    name: str
    description: str
    model: str | None  # None: inherits the main agent's model
    path: str  # folder relative to the project root, e.g. "subagents/research"
    instructions: str
    skills: tuple[Skill, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Project:
    """A valid agent project. Built only by `agentctl.project.load_project`."""

    root: Path
    config_file: str  # agent.toml's path relative to root
    name: str
    model: str
    instructions: str
    # `[agent].description`: what the agent does, in the operator's words (its A2A card).
    description: str | None = None
    sandbox: SandboxConfig = SandboxConfig()
    auth: AuthConfig | None = None
    interrupt_on: dict[str, ApprovalGate] = field(default_factory=dict)
    budgets: Budgets = Budgets()
    skills: tuple[Skill, ...] = ()
    user_template: str | None = None  # None: no user/ folder, so no per-user memory
    subagents: tuple[Subagent, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    files: tuple[str, ...] = ()  # everything that goes into a revision, relative to root
    # The bytes of `files` as validation read them: what a revision bundles and seeds.
    contents: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)
    env: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def models(self) -> tuple[str, ...]:
        """Every model the project uses: the main agent's, then each subagent's own."""
        seen = [self.model]
        seen += [s.model for s in self.subagents if s.model and s.model not in seen]
        return tuple(seen)

    @property
    def all_mcp_servers(self) -> tuple[McpServer, ...]:
        return self.mcp_servers + tuple(m for s in self.subagents for m in s.mcp_servers)

    @property
    def user_owned_servers(self) -> dict[str, McpServer]:
        """The user-owned MCP servers of the agent and its subagents, by name."""
        return {server.name: server for server in self.all_mcp_servers if server.user_owned}

    @property
    def called_agents(self) -> frozenset[str]:
        """The agents of the platform its mcp.json files name."""
        return frozenset(m.agent for m in self.all_mcp_servers if m.agent is not None)
