"""A runtime's secrets are its own: handed to its model clients and tools, never written to
the process environment, gone with the revision that set them."""

from __future__ import annotations

import ast
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from agentctl.bundle.dependencies import MODEL_PROVIDERS
from agentctl.bundle.revision import build_revision
from agentctl.errors import MissingEnvError, RevisionRefused, UserError
from agentctl.project import load_project
from agentctl.runtime import load_agent
from agentctl.runtime.agent import AgentRuntime
from agentctl.runtime.credentials import OPTIONS, model_kwargs, variables
from agentctl.server.context import Server
from agentctl.server.production import open_agent_server
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer

SRC = Path(__file__).parent.parent / "src" / "agentctl"
WRITERS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def environ_writes(tree: ast.AST) -> list[int]:
    """Lines that write to `os.environ` or call `os.putenv`/`os.unsetenv`."""

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Subscript) and is_environ(t.value) for t in targets):
            lines.append(targets[0].lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = node.func.value, node.func.attr
            if (is_environ(owner) and name in WRITERS) or name in ("putenv", "unsetenv"):
                lines.append(node.lineno)
    return sorted(lines)


def test_no_code_writes_the_process_environment() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in environ_writes(ast.parse(path.read_text(), str(path)))
    ]
    assert found == []


def test_the_check_finds_each_kind_of_write() -> None:
    code = (
        "import os\nos.environ['A'] = '1'\nos.environ.update(b)\nos.environ.setdefault('A', 'x')"
        "\ndel os.environ['A']\nos.putenv('A', 'x')\nos.environ.get('A')\n"
    )
    assert environ_writes(ast.parse(code)) == [2, 3, 4, 5, 6]


def test_every_variable_a_model_client_gets_is_deployed_with_the_revision() -> None:
    assert set(OPTIONS) == set(MODEL_PROVIDERS)
    for provider, needs in MODEL_PROVIDERS.items():
        assert variables(provider) <= {*needs.env, *needs.optional}, provider
        assert set(needs.env) <= variables(provider), provider


def test_an_endpoint_the_runtime_lacks_is_the_default_not_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://server-own.invalid/v1")
    assert model_kwargs("openai:gpt-4.1", {"OPENAI_API_KEY": "sk-a"}) == {
        "api_key": "sk-a",
        "base_url": "https://api.openai.com/v1",
    }
    assert model_kwargs("ollama:llama3", {"OLLAMA_HOST": "http://gpu:11434"}) == {
        "base_url": "http://gpu:11434"
    }


def minimal_project(root: Path, model: str, instructions: str = "You help.") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.toml").write_text(f'[agent]\nname = "keyed"\nmodel = "{model}"\n')
    (root / "AGENTS.md").write_text(f"# Keyed\n\n{instructions}\n")
    return root


async def ask(runtime: AgentRuntime, text: str = "hi") -> Any:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    return await runtime.graph.ainvoke({"messages": [("user", text)]}, config)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_two_runtimes_of_one_process_each_send_their_own_key(
    provider: str, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    saved = dict(os.environ)
    root = minimal_project(tmp_path / "p", f"{provider}:scripted")
    key_name = f"{provider.upper()}_API_KEY"
    runtimes = []
    for key in ("sk-agent-one", "sk-agent-two"):
        env = {**model_server.env_for(provider), key_name: key}
        project = load_project(root, environ=env)
        runtime = await load_agent(
            project, key, store=InMemoryStore(), checkpointer=InMemorySaver()
        )
        runtimes.append(runtime)
    keys = ["sk-agent-one", "sk-agent-two"]
    for index in (0, 1, 0):  # in turns: each keeps its own key
        await ask(runtimes[index])
        assert model_server.keys[-1] == keys[index]
    assert dict(os.environ) == saved


async def test_a_key_only_the_process_environment_has_is_not_a_runtimes(
    tmp_path: Path, model_server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-own")
    project = load_project(minimal_project(tmp_path / "p", "openai:scripted"), environ={})
    with pytest.raises(MissingEnvError, match="OPENAI_API_KEY"):
        await load_agent(project, "r", store=InMemoryStore(), checkpointer=InMemorySaver())


# -- deployed revisions -------------------------------------------------------------------


@pytest.fixture
async def platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Server]:
    """`agentctl serve`'s server on SQLite, whose own environment holds model settings that
    no revision may use."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-own")
    env = {"PLATFORM_API_KEY": "pk-platform-key-0123456789", "AGENTCTL_DATA_DIR": str(tmp_path)}
    server = await open_agent_server(Settings.from_env(env))
    try:
        yield server
    finally:
        await server.stop()


async def deploy(server: Server, root: Path, secrets: dict[str, str]) -> AgentRuntime:
    deployments = server.deployments
    assert deployments is not None
    revision = build_revision(load_project(root, environ=secrets))
    await deployments.upload(revision.archive, secrets)
    return server.deployment.runtime


async def test_a_revision_runs_with_its_own_key_and_not_the_last_ones(
    platform: Server, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    saved = dict(os.environ)
    root = minimal_project(tmp_path / "p", "openai:scripted")
    first = await deploy(platform, root, {**model_server.env, "OPENAI_API_KEY": "sk-rev-one"})
    await ask(first)
    assert model_server.keys[-1] == "sk-rev-one"
    minimal_project(root, "openai:scripted", "You help, briefly.")
    with pytest.raises(RevisionRefused, match="needs OPENAI_API_KEY, which the deploy does not"):
        await deploy(platform, root, {"OPENAI_BASE_URL": model_server.base_url})
    second = await deploy(platform, root, {**model_server.env, "OPENAI_API_KEY": "sk-rev-two"})
    await ask(second)
    assert model_server.keys[-1] == "sk-rev-two"
    assert dict(os.environ) == saved


async def test_a_variable_removed_in_a_new_revision_is_gone(
    platform: Server,
    tmp_path: Path,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = minimal_project(tmp_path / "p", "ollama:scripted")
    first = await deploy(platform, root, model_server.env_for("ollama"))
    await ask(first)
    served = model_server.requests
    minimal_project(root, "ollama:scripted", "You help, briefly.")
    async with ScriptedModelServer(keep_alive=False) as servers_own:
        monkeypatch.setenv("OLLAMA_HOST", servers_own.url)
        second = await deploy(platform, root, {})
        assert "OLLAMA_HOST" not in second.project.env
        # Neither revision 1's OLLAMA_HOST nor the server's own: Ollama's default address.
        with pytest.raises(Exception, match="onnect"):
            await ask(second)
        assert servers_own.requests == 0
    assert model_server.requests == served


def test_an_unreadable_google_key_file_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("google.oauth2.service_account")
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json")}
    with pytest.raises(UserError, match=r"missing\.json is not a readable service account key"):
        model_kwargs("google_vertexai:gemini-2.5-pro", env)
