"""Replicas share one `agentctl sandbox-server`: the assistant's sandbox is the same
whichever replica runs the conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentctl.testing.replicas import start_replica
from tests.conftest import sandbox_project
from tests.production.conftest import KEY, Cluster, serving
from tests.server.conftest import call, user


def execute(command: str) -> dict[str, Any]:
    return user(f"{call('execute', command=command)}\n@say {{last_tool_result}}")


async def test_two_replicas_use_the_same_assistant_sandbox(
    cluster: Cluster, sandbox_dir: Path, tmp_path: Path
) -> None:
    service = start_replica(
        {**cluster.env, "AGENTCTL_SANDBOX_DIR": str(sandbox_dir)},
        tmp_path / "sandbox-server",
        command="sandbox-server",
    )
    try:
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
    finally:
        service.terminate()
    assert (sandbox_dir / "boxes" / "a.coder" / "workspace" / "shared.txt").exists()
    for replica in (first, second):  # no replica ran a sandbox of its own
        assert not (replica.data_dir / "sandboxes").exists()
    assert KEY not in service.output()


def test_a_deploy_is_refused_while_the_sandbox_service_is_unreachable(
    cluster: Cluster, tmp_path: Path
) -> None:
    replica = cluster.start(AGENTCTL_SANDBOX_URL="http://127.0.0.1:9")
    deployed = cluster.deploy(sandbox_project(tmp_path / "coder"), replica)
    assert deployed.exit_code != 0
    assert "cannot reach the sandbox service at http://127.0.0.1:9" in deployed.err
    assert "Traceback" not in deployed.err + replica.output()
