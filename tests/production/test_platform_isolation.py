"""Acceptance of a platform of agents on two replicas over PostgreSQL + Redis: agents with
different `[auth]` and memory see nothing of each other (tokens, threads, store, memory,
crons), a deploy or rollback of one agent leaves another's run and stream alone, and a
revision's secrets (MCP headers, model keys) are its own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from agentctl.testing import ScriptedModelServer
from agentctl.testing.identity import IdpBServer, OidcIssuer
from agentctl.testing.mcp_servers import calculator, serve
from tests.conftest import eventually
from tests.production.conftest import (
    KEY,
    OPERATOR,
    Cluster,
    agent_client,
    agent_project,
    agent_serving,
    said,
)
from tests.server.conftest import ALICE, call, sdk, user, with_auth

NEVER_SOON = "0 0 1 1 *"
EVERY_SECOND = "* * * * * *"  # croniter: a sixth field is the seconds


def with_memory(folder: Path, name: str) -> Path:
    """A small project of agent `name` with a per-user memory template."""
    agent_project(folder, name)
    (folder / "user").mkdir()
    (folder / "user" / "AGENTS.md").write_text(f"# About the user of {name}\n")
    return folder


async def status_of(call: Any) -> int:
    """The HTTP status an SDK call fails with."""
    with pytest.raises(httpx.HTTPStatusError) as failed:
        await call
    status: int = failed.value.response.status_code
    return status


def on_model(folder: Path, model: str) -> Path:
    config = folder / "agent.toml"
    config.write_text(config.read_text().replace('"openai:scripted"', f'"{model}"'))
    return folder


async def test_users_tokens_and_data_stay_within_their_agent(
    cluster: Cluster,
    tmp_path: Path,
    idp_b: IdpBServer,
    oidc: OidcIssuer,
    model_server: ScriptedModelServer,
) -> None:
    first, second = cluster.start(), cluster.start()
    # Three agents on three models: two providers, two models of one provider.
    plain = agent_project(tmp_path / "plain", "plain")
    idp = {"provider": "idp_b"}
    anthropic = {**idp_b.env, **model_server.env_for("anthropic")}
    signed = on_model(with_memory(tmp_path / "b", "signed"), "anthropic:scripted")
    signed = with_auth(signed, tmp_path / "signed", idp, anthropic)
    auth = {"provider": "oidc", "issuer": oidc.issuer, "audience": oidc.audience}
    sso = on_model(with_memory(tmp_path / "o", "sso"), "openai:scripted-large")
    sso = with_auth(sso, tmp_path / "sso", auth)
    for folder, model in ((plain, "openai:scripted"), (signed, "anthropic:scripted"),
                          (sso, "openai:scripted-large")):  # fmt: skip
        deployed = cluster.deploy(folder, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
        assert model in deployed.out + deployed.err
    for name in ("plain", "signed", "sso"):
        await agent_serving(second, name, 1)
    url = f"{second.url}/agents"
    b_token, o_token = idp_b.mint(ALICE), oidc.mint(ALICE)  # one user id at both providers
    operator = sdk(f"{url}/plain", api_key=KEY)
    at_signed = sdk(f"{url}/signed", token=b_token)
    at_sso = sdk(f"{url}/sso", token=o_token)
    strays = [
        sdk(f"{url}/plain", token=b_token),
        sdk(f"{url}/sso", token=b_token),
        sdk(f"{url}/signed", token=o_token),
    ]
    try:
        # Each answers at its own URL with the official SDK, its user's memory preloaded.
        assert await said(operator, "plain", "hi") == "hi"
        assert "About the user of signed" in await said(at_signed, "signed", "{system}")
        assert "About the user of sso" in await said(at_sso, "sso", "{system}")

        # A token valid for one agent is 401 at another.
        for stray in strays:
            assert await status_of(stray.threads.search()) == 401
            assert await status_of(stray.assistants.search()) == 401

        # Alice's thread, store item and memory at `signed` are not hers at `sso`.
        thread = await at_signed.threads.create(metadata={"topic": "private"})
        escaped = "alice~40example~2Ecom"
        await at_signed.store.put_item(["users", escaped, "notes"], "n1", {"text": "mine"})
        memory = ["users", escaped, "memories", "signed", "files"]
        written = {"content": "# Alice likes tea\n", "encoding": "utf-8"}
        await at_signed.store.put_item(memory, "/AGENTS.md", written)
        assert (await at_signed.store.get_item(memory, "/AGENTS.md"))["value"] == written
        assert await status_of(at_sso.threads.get(thread["thread_id"])) == 404
        assert await at_sso.threads.search() == []
        assert await status_of(operator.threads.get(thread["thread_id"])) == 404
        found = await at_sso.store.search_items(["users", escaped])
        own = ["users", escaped, "memories", "sso", "files"]  # made by her run at sso
        assert [item["namespace"] for item in found["items"]] == [own]
        assert await at_sso.store.get_item(memory, "/AGENTS.md") is None
        assert await at_sso.store.get_item(["users", escaped, "notes"], "n1") is None
        assert (await operator.store.search_items(["users"]))["items"] == []
        seen = await said(at_sso, "sso", "{system}")
        assert "tea" not in seen
        assert "About the user of sso" in seen
        assert "tea" in await said(at_signed, "signed", "{system}")
    finally:
        for client in (operator, at_signed, at_sso, *strays):
            await client.aclose()


async def test_crons_stay_within_their_agent(cluster: Cluster, tmp_path: Path) -> None:
    first, second = cluster.start(), cluster.start()
    for name in ("ticker", "quiet"):
        assert cluster.deploy(agent_project(tmp_path / name, name), first).exit_code == 0
        await agent_serving(second, name, 1)
    ticker, quiet = (sdk(f"{first.url}/agents/{n}", api_key=KEY) for n in ("ticker", "quiet"))
    try:
        cron: Any = await ticker.crons.create(
            "ticker", schedule=EVERY_SECOND, input=user("@say tick"), on_run_completed="keep"
        )
        kept: Any = await quiet.crons.create("quiet", schedule=NEVER_SOON, input=user("no"))

        async def fired() -> Any:
            return await ticker.threads.search(metadata={"cron_id": cron["cron_id"]})

        threads = await eventually(fired, 15, "the cron of ticker to fire")
        assert threads[0]["metadata"]["graph_id"] == "ticker"
        assert [c["cron_id"] for c in await quiet.crons.search()] == [kept["cron_id"]]
        assert [c["cron_id"] for c in await ticker.crons.search()] == [cron["cron_id"]]
        assert await status_of(quiet.crons.delete(cron["cron_id"])) == 404
        assert await status_of(ticker.crons.delete(kept["cron_id"])) == 404
        await asyncio.sleep(1.5)  # more ticks: none of them reaches quiet
        assert await quiet.threads.search() == []
        await ticker.crons.delete(cron["cron_id"])
    finally:
        await ticker.aclose()
        await quiet.aclose()


async def test_deploy_and_rollback_of_one_agent_leave_another_streaming(
    cluster: Cluster, tmp_path: Path
) -> None:
    first, second = cluster.start(), cluster.start()
    for name in ("changing", "steady"):
        assert cluster.deploy(agent_project(tmp_path / name, name), first).exit_code == 0
        await agent_serving(second, name, 1)
    steady = sdk(f"{second.url}/agents/steady", api_key=KEY)
    joiner = sdk(f"{first.url}/agents/steady", api_key=KEY)
    words = " ".join(f"w{i}" for i in range(20))
    try:
        thread = await steady.threads.create()
        slow = user(f"@slow 0.3 @say {words}")
        modes: Any = ["messages-tuple", "values"]
        run: Any = await steady.runs.create(
            thread["thread_id"], "steady", input=slow, stream_mode=modes
        )

        async def tokens(client: LangGraphClient) -> str:
            seen = []
            async for part in client.runs.join_stream(
                thread["thread_id"], run["run_id"], stream_mode=["messages-tuple"]
            ):
                if part.event == "messages":
                    seen.append(part.data[0]["content"])
            return "".join(seen)

        streams = [asyncio.create_task(tokens(c)) for c in (steady, joiner)]

        async def streaming() -> bool:
            found = await steady.runs.get(thread["thread_id"], run["run_id"])
            return bool(found["status"] == "running")

        await eventually(streaming, 10, "the run of steady to start")
        # A new revision of `changing`, then its rollback, while steady's run streams.
        changed = agent_project(tmp_path / "changing", "changing")
        (changed / "AGENTS.md").write_text("You are changing, revised.\n")
        deployed = await asyncio.to_thread(cluster.deploy, changed, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
        async with httpx.AsyncClient(base_url=first.url, headers=OPERATOR) as http:
            rolled = await http.post("/platform/agents/changing/revisions/1/activate")
        assert rolled.status_code == 200, rolled.text
        await agent_serving(second, "changing", 1)
        assert not any(stream.done() for stream in streams)  # steady was still streaming
        assert await asyncio.gather(*streams) == [words, words]
        found = await steady.runs.get(thread["thread_id"], run["run_id"])
        assert found["status"] == "success"
    finally:
        await steady.aclose()
        await joiner.aclose()


class Heard:
    """An ASGI app in front of `app` that keeps the `Authorization` of each request."""

    def __init__(self, app: Any) -> None:
        self.app, self.authorizations = app, list[str]()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            self.authorizations.append(headers.get(b"authorization", b"").decode())
        await self.app(scope, receive, send)


def calling(folder: Path, name: str, url: str, token: str | None) -> Path:
    """Project `name` whose MCP server `calc` is at `url`, sent `Bearer ${token}` if any,
    that variable's value in `.env` being `<name>-secret`."""
    agent_project(folder, name)
    server: dict[str, Any] = {"url": url}
    (folder / ".env").write_text("")
    if token:
        server["headers"] = {"Authorization": f"Bearer ${{{token}}}"}
        (folder / ".env").write_text(f"{token}={name}-secret\n")
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": server}}))
    return folder


async def test_secrets_are_each_revisions_own(cluster: Cluster, tmp_path: Path) -> None:
    heard = Heard(calculator().streamable_http_app())
    with serve(heard) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        first, second = cluster.start(), cluster.start()
        keeper = calling(tmp_path / "keeper", "keeper", url, "A_TOKEN")
        other = calling(tmp_path / "other", "other", url, "B_TOKEN")
        for folder in (keeper, other):
            deployed = cluster.deploy(folder, first)
            assert deployed.exit_code == 0, deployed.err + deployed.out
        clients = {n: sdk(f"{second.url}/agents/{n}", api_key=KEY) for n in ("keeper", "other")}
        add = call("add", a=2, b=3) + "\n@say added"

        async def heard_at(name: str) -> set[str]:
            """What the MCP server was sent during a run of `name` that calls its tool."""
            heard.authorizations.clear()
            values: Any = await clients[name].runs.wait(None, name, input=user(add))
            assert values["messages"][-1]["content"] == "added"
            assert values["messages"][-2]["content"][0]["text"] == "5"  # the tool answered
            return set(heard.authorizations)

        try:
            for name in ("keeper", "other"):
                await agent_serving(second, name, 1)
            assert await heard_at("keeper") == {"Bearer keeper-secret"}
            assert await heard_at("other") == {"Bearer other-secret"}

            # Revision 2 of keeper drops A_TOKEN: its next run sends nothing of it.
            calling(keeper, "keeper", url, None)
            deployed = cluster.deploy(keeper, first)
            assert deployed.exit_code == 0, deployed.err + deployed.out
            assert "(secrets: OPENAI_API_KEY, OPENAI_BASE_URL)" in deployed.err + deployed.out
            await agent_serving(second, "keeper", 2)
            assert await heard_at("keeper") == {""}
            assert await heard_at("other") == {"Bearer other-secret"}

            # An agent cannot name another's secret: other's revision needing A_TOKEN is
            # refused unless its own deploy sends it.
            calling(other, "other", url, "A_TOKEN")
            (other / ".env").write_text("")
            refused = cluster.deploy(other, first)
            assert refused.exit_code != 0
            assert "A_TOKEN" in refused.err + refused.out
            assert await heard_at("other") == {"Bearer other-secret"}
        finally:
            for client in clients.values():
                await client.aclose()


async def test_model_keys_are_each_agents_own(
    cluster: Cluster, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Each agent's model gets the key of its own `.env`, never another's nor the replicas'
    own; a new revision's key replaces the old at its next run."""
    first, second = cluster.start(), cluster.start()
    projects = {name: agent_project(tmp_path / name, name) for name in ("keeper", "other")}
    clients = {name: [agent_client(r, name) for r in (first, second)] for name in projects}

    def deploy(name: str, dotenv: str) -> str:
        """Deploy `name` with `dotenv` as its `.env`, from a shell without a model key."""
        (projects[name] / ".env").write_text(dotenv)
        deployed = cluster.deploy(projects[name], first, unset=["OPENAI_API_KEY"])
        assert deployed.exit_code == 0, deployed.err + deployed.out
        return deployed.err + deployed.out

    async def keys_of(name: str) -> set[str]:
        """The keys the model was sent during two runs of `name`, one asked of each replica."""
        before = len(model_server.keys)
        for client in clients[name]:
            assert await said(client, name, "hi") == "hi"
        return set(model_server.keys[before:])

    try:
        for name in projects:
            sent = deploy(name, f"OPENAI_API_KEY=sk-{name}-1\n")
            assert "(secrets: OPENAI_API_KEY, OPENAI_BASE_URL)" in sent
            await agent_serving(second, name, 1)
        # Only the deployed keys: never the replicas' own OPENAI_API_KEY (MODEL_KEY).
        assert await keys_of("keeper") == {"sk-keeper-1"}
        assert await keys_of("other") == {"sk-other-1"}

        # The key rotated: keeper's next runs, on either replica, use only the new one.
        deploy("keeper", "OPENAI_API_KEY=sk-keeper-2\n")
        for replica in (first, second):
            await agent_serving(replica, "keeper", 2)
        assert await keys_of("keeper") == {"sk-keeper-2"}
        assert await keys_of("other") == {"sk-other-1"}

        # The key removed: revision 3 moves keeper to another provider, whose key alone
        # its runs send; the replicas' own OPENAI_API_KEY does not step in.
        config = projects["keeper"] / "agent.toml"
        config.write_text(config.read_text().replace("openai:", "anthropic:"))
        anthropic = model_server.env_for("anthropic")["ANTHROPIC_BASE_URL"]
        sent = deploy("keeper", f"ANTHROPIC_API_KEY=sk-keeper-3\nANTHROPIC_BASE_URL={anthropic}\n")
        assert "(secrets: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)" in sent
        for replica in (first, second):
            await agent_serving(replica, "keeper", 3)
        assert await keys_of("keeper") == {"sk-keeper-3"}
        assert await keys_of("other") == {"sk-other-1"}
    finally:
        for client in (c for pair in clients.values() for c in pair):
            await client.aclose()
