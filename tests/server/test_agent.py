"""`GET /agent`: what the running revision tells its agent (instructions, skills, subagents)
and where the caller's own memory file is — for any admitted caller, never a secret."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.testing.identity import IdpBServer
from tests.server.conftest import ALICE, Running, running_server, sdk, user, with_auth

SECRET = "s3cret-value-that-must-never-show"
SKILL_MD = "---\nname: {0}\ndescription: {0} things well\n---\n# {0}\nSteps.\n"


@pytest.fixture
async def signed_in(demo: Path, tmp_path: Path, idp_b: IdpBServer) -> AsyncIterator[Running]:
    """The demo with `[auth]`, and a secret in its `.env` beside the provider's variables."""
    env = {**idp_b.env, "DEMO_SECRET": SECRET}
    project = with_auth(demo, tmp_path / "signed-in", {"provider": "idp_b"}, env)
    async with running_server(project, tmp_path / "data") as running:
        yield running


async def get_agent(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        return await http.get("/agent")


async def test_a_user_sees_the_revisions_instructions_and_where_their_memory_is(
    signed_in: Running, idp_b: IdpBServer
) -> None:
    token = idp_b.mint(ALICE)
    assert (await get_agent(signed_in.url)).status_code == 401
    answer = await get_agent(signed_in.url, {"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    agent = answer.json()
    assert agent["name"] == "demo"
    assert agent["revision"] == signed_in.server.deployment.revision_id
    assert agent["instructions"] == "You are the demo agent.\n"
    review = {"name": "review", "description": "review things well"}
    assert agent["skills"] == [{**review, "content": SKILL_MD.format("review")}]
    assert agent["subagents"] == [
        {
            "name": "researcher",
            "description": "Researches a topic",
            "instructions": "You research.\n",
            "skills": [
                {
                    "name": "search",
                    "description": "search things well",
                    "content": SKILL_MD.format("search"),
                }
            ],
        },
        {"name": "writer", "description": "Writes prose", "instructions": "You write.\n",
         "skills": []},
    ]  # fmt: skip
    namespace = ["users", "alice~40example~2Ecom", "memories", "demo", "files"]
    assert agent["user_memory"] == {
        "path": "/memories/user/AGENTS.md",
        "template": "# About the user\n",
        "namespace": namespace,
        "key": "/AGENTS.md",
    }
    # No value of the project's .env shows, not even in part.
    secrets = [SECRET, *idp_b.env.values()]
    assert not [s for s in secrets if s in answer.text], answer.text

    # The namespace is the one the agent reads: a file put there is in its next prompt.
    alice = sdk(signed_in.url, token=token)
    try:
        value: dict[str, Any] = {"content": "Always answer in French.\n", "encoding": "utf-8"}
        await alice.store.put_item(namespace, "/AGENTS.md", value)
        done = await alice.runs.wait(None, "demo", input=user("@say {system}"))
        assert isinstance(done, dict)
        assert "Always answer in French." in str(done["messages"][-1]["content"])
    finally:
        await alice.aclose()


async def test_without_a_user_there_is_no_memory_namespace(agent: Running) -> None:
    answer = await get_agent(agent.url)
    assert answer.status_code == 200
    memory = answer.json()["user_memory"]
    assert memory["template"] == "# About the user\n"
    assert memory["namespace"] is None


async def test_an_agent_without_user_memory_says_so(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "agent.toml").write_text('[agent]\nname = "plain"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("# Plain\n\nYou answer.\n")
    async with running_server(root, tmp_path / "data") as running:
        agent = (await get_agent(running.url)).json()
    assert agent["instructions"] == "# Plain\n\nYou answer.\n"
    assert agent["skills"] == []
    assert agent["subagents"] == []
    assert agent["user_memory"] is None
