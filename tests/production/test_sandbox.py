"""Replicas share one `agentctl sandbox-server`: the assistant's sandbox is the same
whichever replica runs the conversation, and each agent's sandbox is its own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from agentctl.testing.replicas import Replica, start_replica
from tests.conftest import sandbox_project
from tests.production.conftest import (
    KEY,
    MODEL_KEY,
    OPERATOR,
    Cluster,
    agent_client,
    agent_serving,
    serving,
)
from tests.server.conftest import call, user


def execute(command: str) -> dict[str, Any]:
    return user(f"{call('execute', command=command)}\n@say {{last_tool_result}}")


@contextmanager
def sandbox_service(cluster: Cluster, sandbox_dir: Path, folder: Path) -> Iterator[Replica]:
    """The one `agentctl sandbox-server` of the replicas, keeping its sandboxes in
    `sandbox_dir`; stopped at the end."""
    service = start_replica(
        {**cluster.env, "AGENTCTL_SANDBOX_DIR": str(sandbox_dir)}, folder, command="sandbox-server"
    )
    try:
        yield service
    finally:
        service.terminate()


async def test_two_replicas_use_the_same_assistant_sandbox(
    cluster: Cluster, sandbox_dir: Path, tmp_path: Path
) -> None:
    with sandbox_service(cluster, sandbox_dir, tmp_path / "sandbox-server") as service:
        first = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        second = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        project = sandbox_project(tmp_path / "coder", scope="assistant")
        deployed = cluster.deploy(project, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
        await serving(second, 1)

        on_first, on_second = cluster.client(first), cluster.client(second)
        await on_first.runs.wait(None, "coder", input=execute("echo from-first > shared.txt"))
        seen: Any = await on_second.runs.wait(None, "coder", input=execute("cat shared.txt"))
        assert "from-first" in seen["messages"][-1]["content"]

        (project / "AGENTS.md").write_text("You write and run code, carefully.\n")
        assert cluster.deploy(project, first).exit_code == 0
        await serving(second, 2)
        kept: Any = await on_second.runs.wait(None, "coder", input=execute("cat shared.txt"))
        assert "from-first" in kept["messages"][-1]["content"]  # a redeploy keeps the files
        await on_first.aclose()
        await on_second.aclose()
    assert (sandbox_dir / "boxes" / "a.coder" / "workspace" / "shared.txt").exists()
    for replica in (first, second):  # no replica ran a sandbox of its own
        assert not (replica.data_dir / "sandboxes").exists()
    assert KEY not in service.output()


async def test_sandboxes_stay_within_their_agent(
    cluster: Cluster, sandbox_dir: Path, tmp_path: Path
) -> None:
    """Two agents on one sandbox service: neither sees the other's files, each operator
    list holds its own sandbox only, and a command sees no secret of the replicas or of
    either agent."""
    keys = {"alpha": "sk-alpha-deployed-7f3a51", "beta": "sk-beta-deployed-9c2e84"}
    with sandbox_service(cluster, sandbox_dir, tmp_path / "sandbox-server") as service:
        first = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        second = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        for name, key in keys.items():
            project = sandbox_project(tmp_path / name, scope="assistant", name=name)
            with (project / ".env").open("a") as dotenv:
                dotenv.write(f"OPENAI_API_KEY={key}\n")  # a secret deployed with the agent
            deployed = cluster.deploy(project, first, unset=["OPENAI_API_KEY"])
            assert deployed.exit_code == 0, deployed.err + deployed.out
            await agent_serving(second, name, 1)
        alpha, beta = agent_client(first, "alpha"), agent_client(second, "beta")

        async def output(client: Any, name: str, command: str) -> str:
            values: Any = await client.runs.wait(None, name, input=execute(command))
            said: str = values["messages"][-1]["content"]
            return said

        try:
            await output(alpha, "alpha", "echo alpha-only > mine.txt")
            assert "alpha-only" in await output(alpha, "alpha", "cat mine.txt")
            assert "mine.txt" not in await output(beta, "beta", "ls -a /workspace")
            refused = await output(beta, "beta", "cat mine.txt")
            assert "No such file" in refused
            assert "alpha-only" not in refused
            found = await output(beta, "beta", "find / -name mine.txt 2>/dev/null; echo end")
            assert found.startswith("end\n")  # nowhere in beta's sandbox

            environment = await output(alpha, "alpha", "env")
            assert "HOME=/workspace" in environment
            for secret in (KEY, MODEL_KEY, keys["beta"], keys["alpha"]):
                assert secret not in environment

            async with httpx.AsyncClient(base_url=second.url, headers=OPERATOR) as http:
                for name in keys:
                    listed = (await http.get(f"/agents/{name}/platform/sandboxes")).json()
                    assert [box["name"] for box in listed["sandboxes"]] == [f"a.{name}"]
        finally:
            await alpha.aclose()
            await beta.aclose()
    assert sorted(os.listdir(sandbox_dir / "boxes")) == ["a.alpha", "a.beta"]  # one service


def test_a_deploy_is_refused_while_the_sandbox_service_is_unreachable(
    cluster: Cluster, tmp_path: Path
) -> None:
    replica = cluster.start(AGENTCTL_SANDBOX_URL="http://127.0.0.1:9")
    deployed = cluster.deploy(sandbox_project(tmp_path / "coder"), replica)
    assert deployed.exit_code != 0
    assert "cannot reach the sandbox service at http://127.0.0.1:9" in deployed.err
    assert "Traceback" not in deployed.err + replica.output()
