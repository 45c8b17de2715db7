"""Agents calling agents on one platform (in process, on SQLite): an agent's mcp.json names
another agent, whose MCP tool it calls in-process as the user its run runs for; revisions
and deletions that would break such calls are refused with a reason."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from agentctl.runtime.memory import OPERATOR_KEY
from agentctl.server.platform_host import Platform
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from agentctl.testing.identity import OidcIssuer
from tests.conftest import eventually
from tests.server.conftest import (
    ALICE,
    BOB,
    PLATFORM_KEY,
    PLATFORM_OPERATOR,
    agent_files,
    call,
    platform_at,
    upload,
    user,
)


def asker(root: Path, names: str = "researcher", auth: dict[str, str] | None = None) -> Path:
    """Agent `asker`, whose mcp.json names agent `names` (no url)."""
    agent_files(root, "asker", "You ask the researcher.")
    servers = {"research": {"agent": names}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return with_auth(root, auth)


def researcher(root: Path, auth: dict[str, str] | None = None) -> Path:
    return with_auth(agent_files(root, "researcher", "You research."), auth)


def with_auth(root: Path, auth: dict[str, str] | None) -> Path:
    if auth:
        section = "".join(f'{key} = "{value}"\n' for key, value in auth.items())
        config = root / "agent.toml"
        config.write_text(config.read_text() + "\n[auth]\n" + section)
    return root


def asking(thread_id: str, question: str = "@say found it") -> dict[str, Any]:
    """A run of asker that asks researcher `question` on its thread `thread_id`."""
    ask = call("researcher", message=question, thread_id=thread_id)
    return user(f"{ask}\n@say {{last_tool_result}}")


async def wait(
    http: httpx.AsyncClient, agent: str, body: dict[str, Any], headers: dict[str, str]
) -> Any:
    answer = await http.post(
        f"/agents/{agent}/runs/wait",
        json={"assistant_id": agent, **body},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def sso(oidc: OidcIssuer, audience: str | None = None) -> dict[str, str]:
    return {"provider": "oidc", "issuer": oidc.issuer, "audience": audience or oidc.audience}


def bearer(oidc: OidcIssuer, user_id: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {oidc.mint(user_id)}"}


async def test_an_agent_calls_another_in_process_as_its_user(
    platform: tuple[Platform, httpx.AsyncClient],
    tmp_path: Path,
    model_server: ScriptedModelServer,
    oidc: OidcIssuer,
) -> None:
    _, http = platform
    for root in (
        researcher(tmp_path / "researcher", sso(oidc)),
        asker(tmp_path / "asker", auth=sso(oidc)),
    ):
        deployed = await upload(http, root, model_server)
        assert deployed.status_code == 201, deployed.text

    # Alice asks asker; asker's run calls researcher's MCP tool, in-process, as Alice.
    thread_id = str(uuid.uuid4())
    values = await wait(http, "asker", {"input": asking(thread_id)}, bearer(oidc, ALICE))
    assert values["messages"][-1]["content"] == "found it"

    # The conversation at researcher is Alice's: hers with her token there, not Bob's.
    at_researcher = f"/agents/researcher/threads/{thread_id}"
    mine = await http.get(at_researcher, headers=bearer(oidc, ALICE))
    assert mine.status_code == 200, mine.text
    assert mine.json()["metadata"]["owner"] == ALICE
    assert mine.json()["values"]["messages"][-1]["content"] == "found it"
    assert (await http.get(at_researcher, headers=bearer(oidc, BOB))).status_code == 404

    # Through a subagent of asker, the call is Alice's all the same.
    delegated = str(uuid.uuid4())
    subtask = asking(delegated)["messages"][0]["content"]
    task = call("task", subagent_type="general-purpose", description=subtask)
    values = await wait(
        http, "asker", {"input": user(f"{task}\n@say {{last_tool_result}}")}, bearer(oidc, ALICE)
    )
    assert values["messages"][-1]["content"] == "found it"
    theirs = await http.get(f"/agents/researcher/threads/{delegated}", headers=bearer(oidc, ALICE))
    assert theirs.json()["metadata"]["owner"] == ALICE

    # Bob continuing Alice's conversation through asker finds nothing of hers.
    values = await wait(http, "asker", {"input": asking(thread_id)}, bearer(oidc, BOB))
    assert "not found" in values["messages"][-1]["content"].lower()

    # A run started with the deployment key calls as the operator: no user, no owner.
    operator_thread = str(uuid.uuid4())
    values = await wait(http, "asker", {"input": asking(operator_thread)}, PLATFORM_OPERATOR)
    assert values["messages"][-1]["content"] == "found it"
    found = await http.get(
        f"/agents/researcher/threads/{operator_thread}", headers=PLATFORM_OPERATOR
    )
    assert "owner" not in found.json()["metadata"]

    # researcher now admits the users of another audience: asker's users are refused
    # there, call by call, and the model is told why.
    moved = await upload(http, researcher(tmp_path / "moved", sso(oidc, "elsewhere")), model_server)
    assert moved.status_code == 201, moved.text
    values = await wait(http, "asker", {"input": asking(thread_id)}, bearer(oidc, ALICE))
    refusal = values["messages"][-1]["content"]
    assert refusal.startswith('agent "researcher" does not admit this call'), refusal
    # Only the server says a run is the operator's: a user claiming it in the config
    # is refused all the same.
    forged = {"input": asking(thread_id), "config": {"configurable": {OPERATOR_KEY: True}}}
    values = await wait(http, "asker", forged, bearer(oidc, ALICE))
    assert values["messages"][-1]["content"] == refusal

    # The operator's runs, and its crons' runs, still call researcher: the operator is
    # every agent's.
    values = await wait(http, "asker", {"input": asking(operator_thread)}, PLATFORM_OPERATOR)
    assert values["messages"][-1]["content"] == "found it"
    cron = await http.post(
        "/agents/asker/runs/crons",
        json={"assistant_id": "asker", "schedule": "* * * * * *", "input": asking(
            str(uuid.uuid4())), "on_run_completed": "keep"},
        headers=PLATFORM_OPERATOR,
    )  # fmt: skip
    assert cron.status_code == 200, cron.text
    assert "by_operator" not in cron.json()["payload"]  # the server's own mark, not shown
    cron_id = cron.json()["cron_id"]

    async def answered() -> list[Any]:
        found = await http.post(
            "/agents/asker/threads/search",
            json={"metadata": {"cron_id": cron_id}, "values": {}},
            headers=PLATFORM_OPERATOR,
        )
        return [t for t in found.json() if t["status"] == "idle" and t["values"]]

    fired = (await eventually(answered, 15, "the cron's run to answer"))[0]
    assert fired["values"]["messages"][-1]["content"] == "found it"
    await http.delete(f"/agents/asker/runs/crons/{cron_id}", headers=PLATFORM_OPERATOR)


async def test_calls_that_could_not_work_are_refused_at_deploy(
    platform: tuple[Platform, httpx.AsyncClient],
    tmp_path: Path,
    model_server: ScriptedModelServer,
    oidc: OidcIssuer,
) -> None:
    _, http = platform
    missing = await upload(http, asker(tmp_path / "early"), model_server)
    assert missing.status_code == 400, missing.text
    assert 'names agent "researcher", which has no revision' in missing.json()["detail"]

    signed = await upload(http, researcher(tmp_path / "r", sso(oidc)), model_server)
    assert signed.status_code == 201, signed.text
    # asker's users are not researcher's (another issuer, another audience): every call
    # made for them would be refused, so the revision is.
    for n, other in enumerate(({**sso(oidc), "issuer": oidc.issuer + "/x"}, sso(oidc, "x"))):
        refused = await upload(http, asker(tmp_path / f"wrong{n}", auth=other), model_server)
        assert refused.status_code == 400, refused.text
        detail = refused.json()["detail"]
        assert 'agent "researcher" would refuse every call this agent makes for its users' in detail

    itself = agent_files(tmp_path / "self", "loop", "You loop.")
    (itself / "mcp.json").write_text(json.dumps({"mcpServers": {"me": {"agent": "loop"}}}))
    looped = await upload(http, itself, model_server)
    assert looped.status_code == 400
    assert 'agent "loop" names itself in mcp.json' in looped.json()["detail"]

    # researcher calling back an agent that calls it: a circle, refused.
    assert (await upload(http, asker(tmp_path / "asker", auth=sso(oidc)), model_server)).is_success
    back = researcher(tmp_path / "back", sso(oidc))
    (back / "mcp.json").write_text(json.dumps({"mcpServers": {"ask": {"agent": "asker"}}}))
    circle = await upload(http, back, model_server)
    assert circle.status_code == 400
    assert 'names "asker", which calls it back' in circle.json()["detail"]


async def test_an_agent_open_to_anyone_calls_only_agents_open_to_anyone(
    tmp_path: Path, model_server: ScriptedModelServer, oidc: OidcIssuer
) -> None:
    settings = Settings.from_env(
        {
            "PLATFORM_API_KEY": PLATFORM_KEY,
            "AGENTCTL_DATA_DIR": str(tmp_path / "platform"),
            "AGENTCTL_ALLOW_ANONYMOUS": "true",
        }
    )
    async with platform_at(settings) as (_, http):
        signed = await upload(http, researcher(tmp_path / "r", sso(oidc)), model_server)
        assert signed.status_code == 201, signed.text
        # Anyone may use asker: calling an agent that signs users in would let them in.
        refused = await upload(http, asker(tmp_path / "asker"), model_server)
        assert refused.status_code == 400, refused.text
        detail = refused.json()["detail"]
        assert "would refuse every call this agent makes for anyone" in detail

        open_researcher = await upload(http, researcher(tmp_path / "open"), model_server)
        assert open_researcher.status_code == 201, open_researcher.text
        assert (await upload(http, asker(tmp_path / "asker"), model_server)).is_success
        thread_id = str(uuid.uuid4())
        values = await wait(http, "asker", {"input": asking(thread_id)}, {})  # no credentials
        assert values["messages"][-1]["content"] == "found it"


async def test_deleting_a_called_agent_is_refused_and_a_restart_serves_both(
    platform_settings: Settings,
    tmp_path: Path,
    model_server: ScriptedModelServer,
) -> None:
    async with platform_at(platform_settings) as (hosting, http):
        for root in (researcher(tmp_path / "researcher"), asker(tmp_path / "asker")):
            deployed = await upload(http, root, model_server)
            assert deployed.status_code == 201, deployed.text
        refused = await http.delete("/platform/agents/researcher", headers=PLATFORM_OPERATOR)
        assert refused.status_code == 409
        assert "called by asker" in refused.json()["detail"]
        # So it is by a replica that could not serve asker: its revision says so.
        await hosting._close("asker")
        refused = await http.delete("/platform/agents/researcher", headers=PLATFORM_OPERATOR)
        assert refused.status_code == 409

    # asker is registered first, yet served once researcher is.
    async with platform_at(platform_settings) as (hosting, http):
        assert sorted(hosting.agents) == ["asker", "researcher"]
        thread = str(uuid.uuid4())
        values = await wait(http, "asker", {"input": asking(thread)}, PLATFORM_OPERATOR)
        assert values["messages"][-1]["content"] == "found it"

        # A revision of asker without the call lets researcher go.
        plain = agent_files(tmp_path / "asker", "asker", "You answer alone.")
        (plain / "mcp.json").unlink()
        assert (await upload(http, plain, model_server)).status_code == 201
        gone = await http.delete("/platform/agents/researcher", headers=PLATFORM_OPERATOR)
        assert gone.status_code == 200, gone.text
