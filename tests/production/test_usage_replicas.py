"""Token usage across two `agentctl serve` replicas over one PostgreSQL and one Redis: each
run's stored usage is what the scripted model reported for it, whichever replica executed
it, and the sums per user and for the agent are right, in `/usage` and in the replicas'
`/metrics` added up."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentctl.testing import ScriptedModelServer
from agentctl.testing.identity import IdpBServer
from agentctl.testing.replicas import Replica
from tests.production.conftest import OPERATOR, Cluster, serving
from tests.server.conftest import ALICE, BOB, call, user, with_auth

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

RUNS_PER_CLIENT = 3  # each user, on each replica
KEYS = ("input_tokens", "output_tokens", "cached_tokens", "total_tokens", "model_calls")


def reported_sums(model: ScriptedModelServer, markers: list[str]) -> dict[str, int]:
    """What the scripted model reported to the requests of the runs marked `markers`."""
    picked = [r.usage for r in model.reported if r.marker in markers]
    return {
        "input_tokens": sum(u.input for u in picked),
        "output_tokens": sum(u.output for u in picked),
        "cached_tokens": sum(u.cached for u in picked),
        "total_tokens": sum(u.total for u in picked),
        "model_calls": len(picked),
    }


async def tokens_in_metrics(replica: Replica) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=replica.url, headers=OPERATOR) as http:
        text = (await http.get("/metrics")).text
    return {
        sample.labels["kind"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "agentctl_model_tokens_total"
        and sample.labels.get("model") == "openai:scripted"
    }


async def test_usage_sums_per_user_and_agent_across_replicas(
    cluster: Cluster,
    demo: Path,
    tmp_path: Path,
    idp_b: IdpBServer,
    model_server: ScriptedModelServer,
) -> None:
    project = with_auth(demo, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env)
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(project, first).exit_code == 0
    await serving(second, 1)
    headers = {who: {"Authorization": f"Bearer {idp_b.mint(who)}"} for who in (ALICE, BOB)}
    clients = [
        (who, cluster.client(replica, api_key=None, headers=headers[who]))
        for who in (ALICE, BOB)
        for replica in (first, second)
    ]

    async def one_run(who: str, client: Any, number: int) -> tuple[str, str, str, str]:
        marker = f"usage-{uuid.uuid4().hex[:12]}"
        script = f"{marker}\n{call('add', a=number, b=1)}\n@say done {marker}"
        thread_id = str(uuid.uuid4())
        await client.runs.wait(thread_id, "demo", input=user(script), if_not_exists="create")
        [run] = await client.runs.list(thread_id)
        return who, thread_id, run["run_id"], marker

    runs = await asyncio.gather(
        *(
            one_run(who, client, number)
            for who, client in clients
            for number in range(RUNS_PER_CLIENT)
        )
    )
    try:
        # Each run's usage, read from either replica, is what its model calls reported.
        readers = dict(clients[1::2])  # each user's client on the second replica
        for who, thread_id, run_id, marker in runs:
            record = await readers[who].runs.get(thread_id, run_id)
            stored = cast(dict[str, Any], record)["usage"]  # a key the SDK's Run type lacks
            expected = reported_sums(model_server, [marker])
            assert expected["model_calls"] == 2
            assert {key: stored[key] for key in KEYS} == expected
            assert {key: stored["models"]["openai:scripted"][key] for key in KEYS} == expected

        # Summed per user, and for the agent, through the API (the deployment key sees all).
        today = datetime.now(UTC).date().isoformat()
        async with httpx.AsyncClient(base_url=second.url, headers=OPERATOR) as http:
            answer = await http.get(
                "/usage", params={"group_by": "user", "since": today, "until": today}
            )
        assert answer.status_code == 200, answer.text
        rows = {row["key"]: row for row in answer.json()["rows"]}
        for who in (ALICE, BOB):
            expected = reported_sums(model_server, [r[3] for r in runs if r[0] == who])
            assert {key: rows[who][key] for key in KEYS} == expected
            assert rows[who]["runs"] == 2 * RUNS_PER_CLIENT
        everyone = reported_sums(model_server, [r[3] for r in runs])
        assert {key: answer.json()["total"][key] for key in KEYS} == everyone

        # Each replica counts the tokens of the runs it executed: together, all of them.
        counted = [await tokens_in_metrics(replica) for replica in (first, second)]
        assert sum(c.get("input", 0) for c in counted) == everyone["input_tokens"]
        assert sum(c.get("output", 0) for c in counted) == everyone["output_tokens"]
        assert sum(c.get("cached", 0) for c in counted) == everyone["cached_tokens"]
    finally:
        for _, client in clients:
            await client.aclose()
