"""A revision becomes a compiled deep agent: model, instructions, skills, memory, subagents,
MCP tools and approval gates, checked when it is loaded rather than at the first message."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from deepagents import FilesystemMiddleware, create_deep_agent
from deepagents.middleware.subagents import GENERAL_PURPOSE_SUBAGENT

from agentctl.errors import UserError
from agentctl.project.model import McpServer, Project, Skill
from agentctl.project.tools import builtin_tools, unknown_tool_hint
from agentctl.runtime import memory
from agentctl.runtime.fencing import HoldsRun
from agentctl.runtime.genai_spans import GenAiSpans
from agentctl.runtime.mcp_tools import load_mcp_tools
from agentctl.runtime.metering import Meters
from agentctl.runtime.models import create_models
from agentctl.runtime.namespaces import shared_namespace, subagent_seeds_namespace
from agentctl.runtime.peers import Peers
from agentctl.runtime.subagent_memory import is_seed
from agentctl.runtime.tracing import keep_traced_calls_on_the_loop, tracer_callbacks
from agentctl.runtime.user_tools import UserConnections, UserTools

if TYPE_CHECKING:
    from agentctl.sandbox import Sandboxes


SANDBOX_PROMPT = """

## Your sandbox

You have a Linux sandbox: run shell commands in it with `execute`; the file tools work on it
too. Its working directory is /workspace, where files you write are kept (`pip install`
goes there as well); the rest of the filesystem is read-only. Your skills' files are in
/memories/skills/, so a skill's scripts run there, e.g. `python3 /memories/skills/<skill>/<script>`.
"""


@dataclass
class AgentRuntime:
    """One loaded revision: its project, its compiled graph and the tools it was given."""

    project: Project
    revision_id: str
    graph: Any  # langgraph CompiledStateGraph
    tool_names: frozenset[str] = field(default_factory=frozenset)
    # Users' connections to its user-owned MCP servers (None: it has none).
    connections: UserConnections | None = None

    @property
    def name(self) -> str:
        return self.project.name

    @property
    def description(self) -> str:
        """What the agent does, in the operator's words (`[agent].description`), else a
        neutral line naming it: never its instructions, which callers need not see."""
        return self.project.description or f"The {self.project.name} agent."


async def load_agent(
    project: Project,
    revision_id: str,
    *,
    store: Any,
    checkpointer: Any,
    env: Mapping[str, str] | None = None,
    sandboxes: Sandboxes | None = None,
    peers: Peers | None = None,
    incarnation: str | None = None,
    connections: UserConnections | None = None,
) -> AgentRuntime:
    """Build the agent of `project` and seed its shared memory into `store`.

    `env` (default: `project.env`) is the runtime's own variables: the model clients get
    their keys and endpoints from it, mcp.json its `${VAR}`s, a partner sandbox its keys and
    LangSmith tracing its settings. Nothing is written to the process environment, so
    runtimes of one process never see each other's secrets.

    `sandboxes` is the platform sandbox service, for `[sandbox] provider = "platform_sandbox"`.
    `peers`: the other agents of the platform, which mcp.json may name (`runtime/peers.py`).
    `incarnation`: the agent's on the platform, which names its sandboxes (`SandboxKey`).
    `connections`: users' connections to the user-owned MCP servers (`"oauth"` in mcp.json),
    whose tools are called as the run's user (`runtime/user_tools.py`); needed when the
    project has such servers.

    Raises a `UserError` naming what to install, set or fix when the model, an MCP server,
    the sandbox or an approval gate cannot work.
    """
    env = project.env if env is None else env
    keep_traced_calls_on_the_loop()
    sandbox = None
    if project.sandbox.enabled:
        from agentctl.sandbox import ScopedSandbox, sandbox_pool  # imports agentctl.runtime

        pool = await sandbox_pool(project, sandboxes, env, store)
        # A partner's sandboxes are found through the agent's store, which goes with it.
        platform = project.sandbox.provider == "platform_sandbox"
        owned_by = incarnation if platform else None
        sandbox = ScopedSandbox(pool, project.name, project.sandbox.scope, owned_by)
    # Building the models (a provider package's first import) and compiling the graph take
    # seconds on a busy machine: off the event loop, which keeps serving runs and heartbeats.
    models = await asyncio.to_thread(create_models, project.models, env)
    names = {id(model): name for name, model in models.items()}
    agents = None if peers is None else partial(peers.connection, caller=project)
    user_tools = _user_tools(project.mcp_servers, connections)
    main_tools = await load_mcp_tools(project.mcp_servers, env, agents)
    subagent_names = [sub.name for sub in project.subagents]
    subagent_models = {sub.name: sub.model or project.model for sub in project.subagents}
    subagent_models[GENERAL_PURPOSE_SUBAGENT["name"]] = project.model
    subagents: list[dict[str, Any]] = [
        {
            **GENERAL_PURPOSE_SUBAGENT,
            "tools": main_tools,
            "permissions": memory.subagent_permissions(None),
            "middleware": [
                GenAiSpans(GENERAL_PURPOSE_SUBAGENT["name"]),
                HoldsRun(),
                FilesystemMiddleware(backend=memory.subagent_backend(project.name, None)),
                *user_tools,
                Meters(names, project.model),
            ],
        }
    ]
    tool_names = set(builtin_tools(project.sandbox)) | {tool.name for tool in main_tools}
    for sub in project.subagents:
        own_tools = await load_mcp_tools(sub.mcp_servers, env, agents)
        own_user_tools = _user_tools([*project.mcp_servers, *sub.mcp_servers], connections)
        tool_names |= {tool.name for tool in own_tools}
        backend = memory.subagent_backend(project.name, sub.name)
        spec: dict[str, Any] = {
            "name": sub.name,
            "description": sub.description,
            "system_prompt": sub.instructions,
            "model": models[sub.model or project.model],
            "tools": [*main_tools, *own_tools],
            "permissions": memory.subagent_permissions(sub.name),
            "middleware": [
                GenAiSpans(sub.name),
                HoldsRun(),
                FilesystemMiddleware(backend=backend),
                *own_user_tools,
                Meters(names, sub.model or project.model),
            ],
        }
        if sub.skills:
            spec["skills"] = [f"{memory.MEMORIES}/subagents/{sub.name}/skills/"]
        subagents.append(spec)
    check_gated_tools(project, tool_names)
    user_memory = project.user_template is not None
    middleware: list[Any] = [GenAiSpans(project.name, subagent_models), HoldsRun(), *user_tools]
    if user_memory:
        middleware.append(memory.SeedUserMemory(project.name, project.user_template or ""))
    # Innermost: it sees the tools and the model the call is made with.
    middleware.append(Meters(names, project.model))
    graph = await asyncio.to_thread(
        create_deep_agent,
        model=models[project.model],
        tools=main_tools,
        system_prompt=project.instructions + (SANDBOX_PROMPT if sandbox else ""),
        subagents=subagents,
        skills=[f"{memory.MEMORIES}/skills/"] if project.skills else None,
        memory=[memory.USER_MEMORY_FILE] if user_memory else None,
        permissions=memory.main_permissions(user_memory=user_memory),
        backend=memory.main_backend(
            project.name, subagent_names, user_memory=user_memory, default=sandbox
        ),
        interrupt_on={
            tool: {"allowed_decisions": list(gate.allowed_decisions)}
            for tool, gate in project.interrupt_on.items()
        }
        or None,
        middleware=middleware,
        store=store,
        checkpointer=checkpointer,
        name=project.name,
    )
    callbacks = tracer_callbacks(env)
    if callbacks:
        graph = graph.with_config(callbacks=callbacks)
    await seed_revision(project, store)
    return AgentRuntime(
        project,
        revision_id,
        graph,
        frozenset(tool_names),
        connections=connections if project.user_owned_servers else None,
    )


def _user_tools(
    servers: Sequence[McpServer], connections: UserConnections | None
) -> list[UserTools]:
    """The middleware offering the tools of the user-owned ones of `servers`, if any."""
    owned = [server for server in servers if server.user_owned]
    if not owned:
        return []
    if connections is None:
        raise UserError(
            f"mcp.json: {', '.join(server.name for server in owned)}: user-owned servers "
            '("oauth") need the agent server\'s user connections, which this way of loading '
            "the agent does not have — serve it with agentctl dev or agentctl serve"
        )
    return [UserTools(owned, connections)]


def check_gated_tools(project: Project, tool_names: set[str]) -> None:
    """Every `[interrupt_on]` key names a tool the agent has, now that its MCP servers'
    are known (validation checked them against the built-in tools when it has no server)."""
    unknown = sorted(set(project.interrupt_on) - tool_names)
    if unknown:
        hints = "".join(unknown_tool_hint(name, tool_names) for name in unknown)
        raise UserError(
            f"{project.config_file}: [interrupt_on]: {', '.join(unknown)} "
            f"{'is not a tool' if len(unknown) == 1 else 'are not tools'} of this agent — "
            f"{hints}gate one of its tools instead: {', '.join(sorted(tool_names))}"
        )


async def seed_revision(project: Project, store: Any) -> None:
    """Re-seed the shared memory and each subagent's seeds from the revision.

    User memory is never touched here.
    """
    shared = {"/AGENTS.md": project.instructions.encode("utf-8")}
    shared.update(_skill_files(project, project.skills))
    await memory.reseed(store, shared_namespace(project.name), shared)
    for sub in project.subagents:
        seeds = {"/AGENTS.md": sub.instructions.encode("utf-8")}
        seeds.update(_skill_files(project, sub.skills, base=sub.path))
        await memory.reseed(
            store,
            subagent_seeds_namespace(project.name, sub.name),
            seeds,
            owned=is_seed,
        )


def _skill_files(project: Project, skills: tuple[Skill, ...], base: str = "") -> dict[str, bytes]:
    """Skill files keyed as the memory route sees them: `/skills/<name>/...`."""
    prefix = f"{base}/" if base else ""
    return {
        "/" + path.removeprefix(prefix): project.contents[path]
        for skill in skills
        for path in skill.files
    }
