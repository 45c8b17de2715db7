"""Acceptance of a platform of agents on two replicas over PostgreSQL + Redis: agents with
different `[auth]` and memory see nothing of each other (tokens, threads, store, memory,
crons), a deploy or rollback of one agent leaves another's run and stream alone, and a
revision's secrets are its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctl.testing.identity import IdpBServer, OidcIssuer
from tests.conftest import eventually
from tests.production.conftest import KEY, Cluster
from tests.production.test_platform import project, said, serving
from tests.server.conftest import ALICE, sdk, user, with_auth

NEVER_SOON = "0 0 1 1 *"
EVERY_SECOND = "* * * * * *"  # croniter: a sixth field is the seconds


def with_memory(folder: Path, name: str) -> Path:
    """A small project of agent `name` with a per-user memory template."""
    project(folder, name)
    (folder / "user").mkdir()
    (folder / "user" / "AGENTS.md").write_text(f"# About the user of {name}\n")
    return folder


async def status_of(call: Any) -> int:
    """The HTTP status an SDK call fails with."""
    with pytest.raises(httpx.HTTPStatusError) as failed:
        await call
    status: int = failed.value.response.status_code
    return status


async def test_users_tokens_and_data_stay_within_their_agent(
    cluster: Cluster, tmp_path: Path, idp_b: IdpBServer, oidc: OidcIssuer
) -> None:
    first, second = cluster.start(), cluster.start()
    plain = project(tmp_path / "plain", "plain")
    signed = with_auth(with_memory(tmp_path / "b", "signed"), tmp_path / "signed",
                       {"provider": "idp_b"}, idp_b.env)  # fmt: skip
    auth = {"provider": "oidc", "issuer": oidc.issuer, "audience": oidc.audience}
    sso = with_auth(with_memory(tmp_path / "o", "sso"), tmp_path / "sso", auth)
    for folder in (plain, signed, sso):
        deployed = cluster.deploy(folder, first)
        assert deployed.exit_code == 0, deployed.err + deployed.out
    for name in ("plain", "signed", "sso"):
        await serving(second, name, 1)
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
        assert [item["namespace"] for item in found["items"]] == [
            ["users", escaped, "memories", "sso", "files"]]  # fmt: skip  # her own, from sso's run
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
        assert cluster.deploy(project(tmp_path / name, name), first).exit_code == 0
        await serving(second, name, 1)
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
