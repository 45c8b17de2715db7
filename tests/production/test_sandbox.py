"""Replicas share one `agentctl sandbox-server`: the assistant's sandbox is the same
whichever replica runs the conversation, and each agent's sandbox is its own."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from agentctl.testing.replicas import Replica, start_replica
from tests.conftest import eventually, sandbox_project
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


def boxes(sandbox_dir: Path) -> list[str]:
    """The sandboxes the service keeps, by name."""
    return sorted(os.listdir(sandbox_dir / "boxes"))


async def output(client: Any, command: str, thread_id: str | None = None) -> str:
    """What `command` printed in the sandbox of agent `coder` (on thread `thread_id`)."""
    values: Any = await client.runs.wait(thread_id, "coder", input=execute(command))
    said: str = values["messages"][-1]["content"]
    return said


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
    [box] = boxes(sandbox_dir)
    assert box.startswith("a.coder~~")  # of this incarnation of the agent
    assert (sandbox_dir / "boxes" / box / "workspace" / "shared.txt").exists()
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
                    [box] = [box["name"] for box in listed["sandboxes"]]
                    assert box.startswith(f"a.{name}~~")
        finally:
            await alpha.aclose()
            await beta.aclose()
    alpha_box, beta_box = boxes(sandbox_dir)  # one service
    assert alpha_box.startswith("a.alpha~~")
    assert beta_box.startswith("a.beta~~")


def test_a_deploy_is_refused_while_the_sandbox_service_is_unreachable(
    cluster: Cluster, tmp_path: Path
) -> None:
    replica = cluster.start(AGENTCTL_SANDBOX_URL="http://127.0.0.1:9")
    deployed = cluster.deploy(sandbox_project(tmp_path / "coder"), replica)
    assert deployed.exit_code != 0
    assert "cannot reach the sandbox service at http://127.0.0.1:9" in deployed.err
    assert "Traceback" not in deployed.err + replica.output()


def with_scope(project: Path, scope: str) -> None:
    toml = (project / "agent.toml").read_text()
    (project / "agent.toml").write_text(re.sub(r'scope = "\w+"', f'scope = "{scope}"', toml))


async def test_deleting_an_agent_removes_its_sandboxes(
    cluster: Cluster, sandbox_dir: Path, tmp_path: Path
) -> None:
    """`agentctl delete` removes the agent's assistant and thread sandboxes from the sandbox
    service and names them; the agent deployed again under the same name starts afresh."""
    with sandbox_service(cluster, sandbox_dir, tmp_path / "sandbox-server") as service:
        replica = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        project = sandbox_project(tmp_path / "coder", scope="assistant")
        assert cluster.deploy(project, replica).exit_code == 0
        coder = agent_client(replica, "coder")
        await output(coder, "echo written-by-the-first-coder > notes.txt")
        with_scope(project, "thread")  # a revision whose threads have sandboxes of their own
        assert cluster.deploy(project, replica).exit_code == 0
        await agent_serving(replica, "coder", 2)
        thread = await coder.threads.create()
        await output(coder, "echo in-a-thread > notes.txt", thread["thread_id"])
        made = boxes(sandbox_dir)
        assert [box[:9] for box in made] == ["a.coder~~", "t.coder~~"]
        await coder.aclose()

        deleted = cluster.deploy(project, replica, "delete", "coder", "--yes")
        assert deleted.exit_code == 0, deleted.err
        line = re.search(r"^  sandboxes +2 removed \((.+)\)$", deleted.out, re.M)
        assert line is not None, deleted.out
        assert sorted(line.group(1).split(", ")) == made
        assert "not removed yet" not in deleted.err
        assert boxes(sandbox_dir) == []

        with_scope(project, "assistant")
        again = cluster.deploy(project, replica)
        assert again.exit_code == 0, again.err
        coder = agent_client(replica, "coder")
        seen = await output(coder, "cat notes.txt; ls -a /workspace")
        await coder.aclose()
        assert "No such file" in seen
        assert "written-by-the-first-coder" not in seen
        [fresh] = boxes(sandbox_dir)
        assert fresh.startswith("a.coder~~")
        assert fresh not in made  # a sandbox of the new incarnation


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_sandboxes_of_an_agent_deleted_while_the_service_is_down_go_once_it_is_back(
    cluster: Cluster, sandbox_dir: Path, tmp_path: Path
) -> None:
    """The delete succeeds and says the cleanup is pending; the platform retries until the
    service answers again, and the sandbox goes; the agent deployed again under the same
    name never sees the old files, whether the cleanup happened yet or not."""
    port = free_port()
    env = {**cluster.env, "AGENTCTL_SANDBOX_DIR": str(sandbox_dir)}
    folder = tmp_path / "sandbox-server"
    service = start_replica(env, folder, command="sandbox-server", port=port)
    try:
        replica = cluster.start(AGENTCTL_SANDBOX_URL=service.url)
        project = sandbox_project(tmp_path / "coder", scope="assistant")
        assert cluster.deploy(project, replica).exit_code == 0
        coder = agent_client(replica, "coder")
        await output(coder, "echo written-by-the-first-coder > notes.txt")
        await coder.aclose()
        [old] = boxes(sandbox_dir)
        service.terminate()

        deleted = cluster.deploy(project, replica, "delete", "coder", "--yes")
        assert deleted.exit_code == 0, deleted.err
        assert re.search(r"^  sandboxes +0 removed, cleanup pending$", deleted.out, re.M)
        assert "warning: some sandboxes of coder are not removed yet: " in deleted.err
        assert f"cannot reach the sandbox service at {service.url}" in deleted.err
        assert "Traceback" not in deleted.err + replica.output()
        assert boxes(sandbox_dir) == [old]
        assert "sandboxes of deleted agent 'coder' not all removed yet" in replica.output()

        service = start_replica(env, folder, command="sandbox-server", port=port)
        again = cluster.deploy(project, replica)
        assert again.exit_code == 0, again.err
        coder = agent_client(replica, "coder")
        seen = await output(coder, "cat notes.txt; echo mine > mine.txt")
        assert "No such file" in seen
        assert "written-by-the-first-coder" not in seen

        async def removed() -> bool:
            return old not in boxes(sandbox_dir)

        await eventually(removed, 30, "the old sandbox to be removed")
        [fresh] = boxes(sandbox_dir)  # the new agent's is kept
        assert fresh.startswith("a.coder~~")
        assert "mine" in await output(coder, "cat mine.txt; cat notes.txt")
        await coder.aclose()
        assert re.search(
            r"removed 1 sandboxes of deleted agent 'coder' after \d+ failed", replica.output()
        )
    finally:
        service.terminate()
