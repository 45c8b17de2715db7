"""The A2A agent card: the A2A 1.0 card (valid under the 1.0 JSON Schema) for 1.x clients,
the card with the v0.3 fields for 0.3 clients (the official a2a-sdk 0.3 client talks to the
endpoint), a description in the operator's words only, and the credentials the server
really requires."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from agentctl.server.access import AccessPolicy
from tests.server.a2a_schema import schema_of
from tests.server.conftest import Running, running_server

CARD_PATH = "/.well-known/agent-card.json"
V1 = {"A2A-Version": "1.0"}
CARD_SCHEMA = Draft202012Validator(schema_of("AgentCard"))
V03_SDK = "a2a-sdk==0.3.26"  # the last 0.3 release of the official SDK


def schema_problems(card: dict[str, Any]) -> list[str]:
    """What makes `card` invalid under the A2A 1.0 JSON Schema of an AgentCard."""
    return [
        f"/{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in CARD_SCHEMA.iter_errors(card)
    ]


async def cards(running: Running, **params: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The card as a 1.0 client and as a 0.3 client (no version) get it."""
    async with httpx.AsyncClient(base_url=running.url) as http:
        v1 = await http.get(CARD_PATH, params=params, headers=V1)
        v03 = await http.get(CARD_PATH, params=params)
    assert v1.status_code == v03.status_code == 200, (v1.text, v03.text)
    return v1.json(), v03.json()


async def test_a_1_0_client_gets_the_1_0_card_and_a_0_3_client_its_fields(agent: Running) -> None:
    assistant_id = agent.server.deployment.assistant_id
    endpoint = f"{agent.url}/a2a/{assistant_id}"
    async with httpx.AsyncClient(base_url=agent.url) as http:
        v1 = await http.get(CARD_PATH, headers=V1)
        by_param = await http.get(CARD_PATH, params={"A2A-Version": "1.0"})
        beside = await http.get(f"/a2a/{assistant_id}{CARD_PATH}", headers=V1)
        v03 = await http.get(CARD_PATH)  # no version: a 0.3 client, as the specification says
        named_v03 = await http.get(CARD_PATH, headers={"A2A-Version": "0.3"})
        unknown = await http.get(CARD_PATH, headers={"A2A-Version": "2.0"})
    card = v1.json()
    assert schema_problems(card) == []
    assert card == by_param.json() == beside.json()
    assert card["supportedInterfaces"] == [
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    for v03_field in ("url", "protocolVersion", "preferredTransport", "additionalInterfaces"):
        assert v03_field not in card
    legacy = v03.json()
    assert legacy == named_v03.json()
    assert legacy["url"] == endpoint
    assert legacy["preferredTransport"] == "JSONRPC"
    assert legacy["protocolVersion"].startswith("0.3")
    assert legacy["supportedInterfaces"] == card["supportedInterfaces"]  # 1.x clients read it
    # One card per version (and per Host: no public URL is set here): caches keep them apart.
    assert v1.headers["vary"] == v03.headers["vary"] == "Host, A2A-Version"
    assert v1.headers["etag"] != v03.headers["etag"]
    assert unknown.status_code == 400
    assert "A2A-Version '2.0'" in unknown.json()["detail"]


async def test_the_card_requires_the_credentials_the_server_requires(agent: Running) -> None:
    cases: list[tuple[AccessPolicy, list[str]]] = [
        (AccessPolicy(anonymous=True), []),
        (AccessPolicy(api_key="k", anonymous=True), []),  # anyone may call: no requirement
        (AccessPolicy(api_key="k"), ["apiKey"]),
    ]
    got: list[tuple[list[list[str]], list[str], list[list[str]]]] = []
    v1_cards = []
    for policy, _ in cases:
        agent.server.access = policy
        v1, v03 = await cards(agent)
        v1_cards.append(v1)
        requirements = [list(r["schemes"]) for r in v1.get("securityRequirements", [])]
        legacy = [list(r) for r in v03.get("security", [])]
        got.append((requirements, list(v1.get("securitySchemes", {})), legacy))
    assert got == [([[n] for n in names], names, [[n] for n in names]) for _, names in cases]
    assert [schema_problems(card) for card in v1_cards] == [[]] * len(cases)
    assert v1["securitySchemes"]["apiKey"] == {
        "apiKeySecurityScheme": {
            "location": "header",
            "name": "x-api-key",
            "description": "the deployment's API key (operators)",
        }
    }


LEAKY_AGENTS_MD = "You review code. The staging token is tok-SECRET-4711.\n\nBe brief.\n"
SKILL_MD = (
    "---\nname: review\ndescription: Reviews a pull request\n---\n"
    "# Review\nUse the token tok-SKILL-BODY-0815.\n"
)


def leaky_project(root: Path, description: str | None) -> Path:
    """An agent whose AGENTS.md and skill body hold a secret."""
    (root / "skills/review").mkdir(parents=True)
    extra = f"description = {json.dumps(description)}\n" if description is not None else ""
    (root / "agent.toml").write_text(f'[agent]\nname = "leaky"\nmodel = "openai:scripted"\n{extra}')
    (root / "AGENTS.md").write_text(LEAKY_AGENTS_MD)
    (root / "skills/review/SKILL.md").write_text(SKILL_MD)
    return root


async def test_the_card_never_publishes_the_agents_instructions(tmp_path: Path) -> None:
    for number, description in enumerate((None, "Reviews pull requests for the web team")):
        root = leaky_project(tmp_path / f"leaky-{number}", description)
        async with running_server(root, tmp_path / f"data-{number}") as running:
            v1, v03 = await cards(running)
            created = await running.client.assistants.create(
                "leaky", name="nightly", description="Reviews the nightly build"
            )
            own, _ = await cards(running, assistant_id=created["assistant_id"])
        for card in (v1, v03, own):
            text = json.dumps(card)
            assert "SECRET" not in text
            assert "SKILL-BODY" not in text
        assert schema_problems(v1) == schema_problems(own) == []
        expected = description or "The leaky agent."  # a neutral line naming the agent
        assert v1["description"] == v03["description"] == expected
        assert v1["skills"][0]["description"] == expected
        assert v1["skills"][1] == {
            "id": "skill:review",
            "name": "review",
            "description": "Reviews a pull request",  # SKILL.md's frontmatter
            "tags": ["skill"],
        }
        assert own["description"] == "Reviews the nightly build"  # the assistant's own


# -- the official a2a-sdk 0.3 client, in a virtualenv of its own ---------------------------

V03_CLIENT = """
import asyncio, json, sys, uuid
import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TaskQueryParams, TextPart

async def main(base_url, assistant):
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card(
            relative_card_path=f"/.well-known/agent-card.json?assistant_id={assistant}")
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        message = Message(role=Role.user, message_id=str(uuid.uuid4()),
                          parts=[Part(root=TextPart(text="hello from 0.3"))])
        [(task, _)] = [event async for event in client.send_message(message)]
        got = await client.get_task(TaskQueryParams(id=task.id))
        print(json.dumps({
            "url": card.url,
            "protocol_version": card.protocol_version,
            "state": got.status.state.value,
            "answer": got.artifacts[-1].parts[0].root.text,
        }))

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.fixture(scope="session")
def v03_python() -> Path:
    """The python of a virtualenv holding the a2a-sdk 0.3 client (it cannot share this
    one's 1.x), made once and kept under the user's cache folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "agentctl-tests" / V03_SDK.replace("==", "-")
    python = folder / "bin" / "python"
    marker = folder / ".installed"
    if not marker.is_file():
        venv.create(folder, with_pip=True, clear=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", V03_SDK],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"installing {V03_SDK} failed:\n{done.stderr}", pytrace=False)
        marker.touch()
    return python


@pytest.mark.slow
async def test_the_a2a_sdk_0_3_client_still_talks_to_the_agent(
    agent: Running, v03_python: Path
) -> None:
    child = await asyncio.create_subprocess_exec(
        str(v03_python),
        "-c",
        V03_CLIENT,
        agent.url,
        "demo",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()
    result = json.loads(out)
    assert result == {
        "url": f"{agent.url}/a2a/{agent.server.deployment.assistant_id}",
        "protocol_version": result["protocol_version"],
        "state": "completed",
        "answer": "scripted reply to: hello from 0.3",
    }
    assert result["protocol_version"].startswith("0.3")
    assert sys.executable != str(v03_python)
