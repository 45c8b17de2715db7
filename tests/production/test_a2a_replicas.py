"""A2A behind a load balancer: tasks and their artifacts are the platform's, so every
`agentctl serve` replica over one PostgreSQL and one Redis answers the same for them."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)

from agentctl.testing.replicas import Replica
from tests.production.conftest import KEY, Cluster, serving

OPERATOR = {"x-api-key": KEY}


def summary(task: Task) -> tuple[str, str, str, list[str]]:
    """What a client sees of a task: id, context, state and the text of each artifact."""
    texts = [get_artifact_text(artifact, delimiter="") for artifact in task.artifacts]
    return task.id, task.context_id, TaskState.Name(task.status.state), texts


async def on(replica: Replica, texts: list[str]) -> list[Task]:
    """Send each of `texts` as a new task through `replica`: the tasks as they ended."""
    async with httpx.AsyncClient(headers=OPERATOR, timeout=60) as http:
        card = await A2ACardResolver(http, replica.url).get_agent_card()
        async with ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(
            card
        ) as client:
            tasks = []
            for text in texts:
                request = SendMessageRequest(
                    message=Message(
                        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]
                    )
                )
                [response] = [r async for r in client.send_message(request)]
                tasks.append(response.task)
            return tasks


async def seen_from(replica: Replica, task_ids: list[str]) -> tuple[list[Task], list[Task]]:
    """`ListTasks` (with artifacts) and `GetTask` of each of `task_ids`, through `replica`."""
    async with httpx.AsyncClient(headers=OPERATOR, timeout=60) as http:
        card = await A2ACardResolver(http, replica.url).get_agent_card()
        async with ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(
            card
        ) as client:
            listed = await client.list_tasks(ListTasksRequest(include_artifacts=True))
            got = [await client.get_task(GetTaskRequest(id=task_id)) for task_id in task_ids]
    return list(listed.tasks), got


async def test_every_replica_lists_and_gets_the_same_tasks_with_their_artifacts(
    cluster: Cluster, demo: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    assert cluster.deploy(demo, first).exit_code == 0
    await serving(second, 1)
    sent = await on(first, [f"question {n}" for n in range(4)])
    expected = [
        (t.id, t.context_id, "TASK_STATE_COMPLETED", [f"scripted reply to: question {n}"])
        for n, t in enumerate(sent)
    ]
    assert [summary(t) for t in sent] == expected
    ids = [t.id for t in sent]
    for replica in (first, second):
        listed, got = await seen_from(replica, ids)
        assert sorted(summary(t) for t in listed) == sorted(expected), replica.url
        assert [summary(t) for t in got] == expected, replica.url
    # Deleting a conversation deletes its tasks, on every replica.
    async with httpx.AsyncClient(base_url=second.url, headers=OPERATOR) as http:
        assert (await http.delete(f"/threads/{sent[0].context_id}")).status_code == 204
    listed, _ = await seen_from(first, ids[1:])
    assert sorted(t.id for t in listed) == sorted(ids[1:])
