"""`agentctl serve` replicas as real processes over one PostgreSQL database and one Redis,
driven by the official langgraph-sdk client and by `agentctl deploy` itself."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agentctl.storage.namespace import Namespace
from agentctl.testing import ScriptedModelServer
from agentctl.testing.replicas import Replica, start_replica
from tests.conftest import CliResult, RunCli, eventually
from tests.server.conftest import user

KEY = "pk-test-deployment-key-0123456789"
MODEL_KEY = "sk-test-8c1f0e-must-never-leak"


@dataclass
class Cluster:
    """Replicas of one deployment; each started on demand, all killed at the end."""

    env: dict[str, str]
    folder: Path
    run_cli: RunCli
    replicas: list[Replica] = field(default_factory=list)

    def start(self, **env: str) -> Replica:
        replica = start_replica({**self.env, **env}, self.folder / f"replica-{len(self.replicas)}")
        self.replicas.append(replica)
        return replica

    def deploy(
        self,
        project: Path,
        replica: Replica,
        *args: str,
        key: str = KEY,
        input: str = "",
        unset: Iterable[str] = (),
    ) -> CliResult:
        """`agentctl deploy` (or `agentctl ARGS`) in folder `project` against `replica`, as a
        user runs it in a shell with the replicas' environment but `unset` (so the project's
        `.env` gives those); `input`: what the user types."""
        env = {**self.env, "PLATFORM_URL": replica.url, "PLATFORM_API_KEY": key}
        return self.run_cli(*args or ("deploy",), cwd=project, env=env, input=input, unset=unset)

    def connect(self, agent: str = "demo") -> psycopg.Connection[Any]:
        """A connection to the database, in the schema of `agent`'s tables."""
        schema = Namespace.of(agent).schema
        return psycopg.connect(self.env["DATABASE_URL"], options=f"-c search_path={schema}")

    def executing(self, run_id: str, agent: str = "demo") -> tuple[Replica, Replica]:
        """The replica whose worker holds the run's lease, and another one."""
        with self.connect(agent) as conn:
            row = conn.execute("SELECT worker FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        assert row is not None, f"run {run_id} does not exist"
        assert row[0], f"run {run_id} is not running"
        pid = int(row[0].split(":")[1])  # workers are host:pid:nonce
        runner = next(r for r in self.replicas if r.process.pid == pid)
        other = next(r for r in self.replicas if r is not runner and r.alive)
        return runner, other

    def client(self, replica: Replica, **options: Any) -> LangGraphClient:
        options.setdefault("api_key", KEY)
        return get_client(url=replica.url, **options)


@pytest.fixture
def cluster(
    database_url: str,
    redis_server_url: str,
    redis_prefix: str,
    model_server: ScriptedModelServer,
    run_cli: RunCli,
    tmp_path: Path,
) -> Iterator[Cluster]:
    env = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_server_url,
        "AGENTCTL_REDIS_PREFIX": redis_prefix,
        "PLATFORM_API_KEY": KEY,
        "AGENTCTL_LEASE_SECONDS": "1.5",
        "AGENTCTL_SHUTDOWN_GRACE_SECONDS": "15",
        "AGENTCTL_MAX_RUNS": "8",
        **model_server.env,
        "OPENAI_API_KEY": MODEL_KEY,  # the scripted model takes any key
    }
    cluster = Cluster(env, tmp_path / "replicas", run_cli)
    yield cluster
    for replica in cluster.replicas:
        if replica.alive:
            replica.kill()


async def info(replica: Replica) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=replica.url) as http:
        answer: dict[str, Any] = (await http.get("/info")).json()
        return answer


async def serving(replica: Replica, number: int) -> None:
    """Wait until `replica` serves revision `number` (a deploy reaches it within seconds)."""

    async def switched() -> bool:
        served: int = (await info(replica))["revision_number"]
        return served == number

    await eventually(switched, 10, f"the replica to serve revision {number}")


OPERATOR = {"x-api-key": KEY}


def agent_project(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.toml").write_text(f'[agent]\nname = "{name}"\nmodel = "openai:scripted"\n')
    (folder / "AGENTS.md").write_text(f"# {name}\n\nYou are {name}.\n")
    return folder


def agent_client(replica: Replica, name: str) -> LangGraphClient:
    return get_client(url=f"{replica.url}/agents/{name}", api_key=KEY)


async def agent_serving(replica: Replica, name: str, number: int) -> None:
    async def live() -> bool:
        async with httpx.AsyncClient(base_url=f"{replica.url}/agents/{name}") as http:
            answer = await http.get("/info")
        return answer.status_code == 200 and answer.json()["revision_number"] == number

    await eventually(live, 15, f"{replica.url} to serve revision {number} of {name}")


async def said(client: LangGraphClient, assistant: str, text: str) -> str:
    values: Any = await client.runs.wait(None, assistant, input=user(f"@say {text}"))
    content: str = values["messages"][-1]["content"]
    return content
