"""Webhooks: a run that ends is posted, signed, to the URL it (or its cron) named — checked
by a real HTTP receiver on an ephemeral port, with our verifier and the reference Standard
Webhooks one; retries, slow receivers, refused addresses and the counts of `/metrics`."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import standardwebhooks
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError
from starlette.types import Receive, Scope, Send

from agentctl import webhooks
from agentctl.engine.egress import LOOPBACK
from agentctl.engine.webhooks import Webhooks, WebhookSettings
from agentctl.errors import WebhookVerificationError
from agentctl.observability import Metrics
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from tests.conftest import eventually
from tests.dev_process import StartDev
from tests.server.conftest import (
    PLATFORM_KEY,
    PLATFORM_OPERATOR,
    Running,
    deploy,
    error_detail,
    platform_at,
    running_server,
    user,
)
from tests.server.test_system import samples

SECRET = webhooks.new_secret()
FAST = WebhookSettings(SECRET, LOOPBACK, timeout=5.0, attempts=4, first_retry=0.05)


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes

    def verified(self, secret: str = SECRET) -> Any:
        return webhooks.verify(self.body, self.headers, secret)


@dataclass
class Receiver:
    """An HTTP server taking POSTs: it answers `failures` 500s first, then 204s; while
    `hold` is clear it keeps each request waiting."""

    url: str = ""
    failures: int = 0
    answer: int = 204  # once the failures are over
    received: list[Delivery] = field(default_factory=list)
    hold: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.hold.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.received.append(Delivery(headers, body))
        await self.hold.wait()
        status = 500 if len(self.received) <= self.failures else self.answer
        moved = [(b"location", b"http://169.254.169.254/")] if 300 <= status < 400 else []
        await send({"type": "http.response.start", "status": status, "headers": moved})
        await send({"type": "http.response.body", "body": b""})

    async def deliveries(self, count: int = 1) -> list[Delivery]:
        async def enough() -> bool:
            return len(self.received) >= count

        await eventually(enough, what=f"{count} webhook deliveries")
        return self.received


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    found.url = f"http://127.0.0.1:{sock.getsockname()[1]}/hooks/run?token=query-secret"
    server = uvicorn.Server(uvicorn.Config(found, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield found
    finally:
        found.hold.set()
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def hooked(demo: Path, tmp_path: Path) -> AsyncIterator[Running]:
    """The demo served with a known secret and quick retries."""
    async with running_server(demo, tmp_path / "data", webhooks=FAST) as running:
        yield running


async def metric_counts(url: str) -> dict[str, float]:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{url}/metrics")).text
    return {
        dict(labels)["outcome"]: value
        for (name, labels), value in samples(text).items()
        if name == "agentctl_webhook_deliveries_total"
    }


async def test_a_run_that_succeeds_posts_itself_signed(hooked: Running, receiver: Receiver) -> None:
    thread = await hooked.client.threads.create()
    values: Any = await hooked.client.runs.wait(
        thread["thread_id"], "demo", input=user("hello"), webhook=receiver.url
    )
    [delivery] = await receiver.deliveries()
    run = delivery.verified()
    # The reference implementation of Standard Webhooks agrees.
    assert standardwebhooks.Webhook(SECRET).verify(delivery.body, delivery.headers) == run
    assert delivery.headers["content-type"] == "application/json"
    assert delivery.headers["webhook-id"] == run["run_id"]
    assert run["thread_id"] == thread["thread_id"]
    assert run["status"] == "success"
    assert run["kwargs"]["webhook"] == receiver.url
    assert run["values"] == values
    assert run["values"]["messages"][-1]["content"] == "scripted reply to: hello"
    assert "error" not in run
    for stamp in ("created_at", "run_started_at", "run_ended_at", "webhook_sent_at"):
        assert run[stamp], stamp
    stored: Any = await hooked.client.runs.get(thread["thread_id"], run["run_id"])
    assert stored["status"] == "success"
    counted = {"delivered": 1, "failed": 0, "refused": 0, "dropped": 0}

    async def delivered() -> bool:  # counted once the receiver's answer is in
        return await metric_counts(hooked.url) == counted

    await eventually(delivered)


async def test_a_run_that_fails_posts_its_error(hooked: Running, receiver: Receiver) -> None:
    await hooked.client.runs.wait(
        None,
        "demo",
        input=user("@fail 400 the model refused"),
        webhook=receiver.url,
        raise_error=False,
    )
    [delivery] = await receiver.deliveries()
    run = delivery.verified()
    assert run["status"] == "error"
    assert "the model refused" in run["error"]


def test_a_forged_changed_or_replayed_webhook_is_refused() -> None:
    body = b'{"run_id": "r1"}'
    headers = webhooks.sign(SECRET, "r1", body)
    assert webhooks.verify(body, headers, SECRET) == {"run_id": "r1"}
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        webhooks.verify(body, headers, webhooks.new_secret())
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        webhooks.verify(b'{"run_id": "r2"}', headers, SECRET)
    old = webhooks.sign(SECRET, "r1", body, timestamp=1_000_000_000)
    with pytest.raises(WebhookVerificationError, match="replay"):
        webhooks.verify(body, old, SECRET)
    # A header no signature could be (headers arrive as latin-1) is refused, not an error.
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        webhooks.verify(body, {**headers, "webhook-signature": "v1,\xe9"}, SECRET)
    with pytest.raises(WebhookVerificationError, match="missing header webhook-signature"):
        webhooks.verify(body, {"webhook-id": "r1", "webhook-timestamp": "1"}, SECRET)
    # Keys derived from the deployment key are the same on every replica.
    assert webhooks.secret_for(PLATFORM_KEY) == webhooks.secret_for(PLATFORM_KEY)
    webhooks.secret_key(webhooks.secret_for(PLATFORM_KEY))


async def test_a_failing_receiver_gets_it_on_a_retry(hooked: Running, receiver: Receiver) -> None:
    receiver.failures = 2
    await hooked.client.runs.wait(None, "demo", input=user("again"), webhook=receiver.url)
    deliveries = await receiver.deliveries(3)
    runs = [delivery.verified() for delivery in deliveries]
    assert len({delivery.headers["webhook-id"] for delivery in deliveries}) == 1
    assert {run["run_id"] for run in runs} == {runs[0]["run_id"]}

    async def delivered() -> bool:
        return (await metric_counts(hooked.url))["delivered"] == 1

    await eventually(delivered)
    assert len(receiver.received) == 3


async def test_a_receiver_that_keeps_failing_is_logged_once_and_counted(
    hooked: Running, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.failures = 100
    caplog.set_level(logging.WARNING, "agentctl.webhooks")
    await hooked.client.runs.wait(None, "demo", input=user("no one home"), webhook=receiver.url)

    async def failed() -> bool:
        return (await metric_counts(hooked.url))["failed"] == 1

    await eventually(failed)
    assert len(receiver.received) == FAST.attempts
    [record] = [r for r in caplog.records if r.name == "agentctl.webhooks"]
    message = record.getMessage()
    assert "HTTP 500" in message
    assert "after 4 attempts" in message
    assert "/hooks/run" in message
    assert "query-secret" not in message
    assert SECRET not in message
    assert record.exc_info is None


async def test_a_cron_run_posts_to_the_crons_webhook(hooked: Running, receiver: Receiver) -> None:
    cron: Any = await hooked.client.crons.create(
        "demo", schedule="* * * * * *", input=user("tick"), webhook=receiver.url
    )
    [delivery, *_] = await receiver.deliveries()
    await hooked.client.crons.delete(cron["cron_id"])
    run = delivery.verified()
    assert run["status"] == "success"
    # Its thread is gone (a stateless cron's), its values are in the webhook.
    assert run["values"]["messages"][-1]["content"] == "scripted reply to: tick"
    assert run["metadata"] == {}
    assert run["kwargs"]["webhook"] == receiver.url


async def test_a_slow_receiver_does_not_hold_the_run_back(
    hooked: Running, receiver: Receiver
) -> None:
    receiver.hold.clear()  # the receiver answers nothing until told to
    thread = await hooked.client.threads.create()
    events = [
        part.event
        async for part in hooked.client.runs.stream(
            thread["thread_id"], "demo", input=user("quick"), webhook=receiver.url
        )
    ]
    assert events[-1] == "end" or events[-1] == "values"
    [run] = await hooked.client.runs.list(thread["thread_id"])
    assert run["status"] == "success"
    await receiver.deliveries()  # the webhook is on its way, still unanswered
    assert (await metric_counts(hooked.url))["delivered"] == 0
    second: Any = await hooked.client.runs.wait(thread["thread_id"], "demo", input=user("next"))
    assert second["messages"][-1]["content"] == "scripted reply to: next"
    receiver.hold.set()

    async def delivered() -> bool:
        return (await metric_counts(hooked.url))["delivered"] == 1

    await eventually(delivered)


async def test_agentctl_dev_delivers_to_loopback(
    agent: Running, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    await agent.client.runs.wait(None, "demo", input=user("local"), webhook=receiver.url)
    [delivery] = await receiver.deliveries()
    assert delivery.headers["webhook-signature"].startswith("v1,")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/hook", "http:// or https://"),
        ("not a url", "http:// or https://"),
        ("http:///path-only", "names no host"),
        ("http://a..b/hook", "not a valid host name"),
        (f"http://{'a' * 64}.example/hook", "not a valid host name"),
    ],
)
async def test_a_webhook_that_is_not_an_http_url_is_refused(
    hooked: Running, url: str, why: str
) -> None:
    thread = await hooked.client.threads.create()
    with pytest.raises(UnprocessableEntityError) as caught:
        await hooked.client.runs.create(thread["thread_id"], "demo", input=user("x"), webhook=url)
    assert error_detail(caught).startswith("webhook: ")
    assert why in error_detail(caught)
    with pytest.raises(UnprocessableEntityError) as caught:
        await hooked.client.crons.create("demo", schedule="0 0 1 1 *", webhook=url)
    assert error_detail(caught).startswith("webhook: ")
    assert await hooked.client.runs.list(thread["thread_id"]) == []


# -- the production server: no private address unless the operator allows it ---------------

REFUSED = {
    "http://127.0.0.1:9/hook": "loopback",
    "http://10.0.0.1/hook": "private",
    "http://169.254.169.254/latest/meta-data/": "link-local",
    "http://[::1]:9/hook": "loopback",
    "http://0.0.0.0/hook": "unspecified",
    "http://224.0.0.1/hook": "multicast",
    "http://localhost:9/hook": "loopback",  # a name resolving to loopback
    "http://[::ffff:127.0.0.1]:9/hook": "loopback",  # IPv4 inside IPv6
    "http://2130706433:9/hook": "loopback",  # 127.0.0.1 as one number
    "https://192.168.1.1/hook": "private",
    "http://100.64.0.1/hook": "non-public",  # carrier-grade NAT
}


@pytest.mark.slow
async def test_the_production_server_refuses_private_addresses(
    tmp_path: Path, model_server: ScriptedModelServer, receiver: Receiver
) -> None:
    settings = Settings.from_env(
        {"PLATFORM_API_KEY": PLATFORM_KEY, "AGENTCTL_DATA_DIR": str(tmp_path / "platform")}
    )
    async with platform_at(settings) as (_, http):
        await deploy(http, tmp_path / "hooked", "hooked", model_server, "Hooks.")
        base = "/agents/hooked"
        for url, kind in {**REFUSED, receiver.url: "loopback"}.items():
            answer = await http.post(
                f"{base}/runs", json={"assistant_id": "hooked", "webhook": url},
                headers=PLATFORM_OPERATOR,
            )  # fmt: skip
            assert answer.status_code == 422, (url, answer.text)
            detail = answer.json()["detail"]
            assert detail.startswith("webhook: "), detail
            assert f"is not a public address ({kind})" in detail, detail
            assert "AGENTCTL_WEBHOOK_ALLOW_NETWORKS" in detail
            cron = await http.post(
                f"{base}/runs/crons",
                json={"assistant_id": "hooked", "schedule": "0 0 1 1 *", "webhook": url},
                headers=PLATFORM_OPERATOR,
            )
            assert cron.status_code == 422, (url, cron.text)
    assert receiver.received == []


@pytest.mark.slow
async def test_the_operator_may_allow_a_network(
    tmp_path: Path, model_server: ScriptedModelServer, receiver: Receiver
) -> None:
    settings = Settings.from_env({
        "PLATFORM_API_KEY": PLATFORM_KEY,
        "AGENTCTL_DATA_DIR": str(tmp_path / "platform"),
        "AGENTCTL_WEBHOOK_ALLOW_NETWORKS": "127.0.0.0/8",
    })  # fmt: skip
    async with platform_at(settings) as (_, http):
        await deploy(http, tmp_path / "hooked", "hooked", model_server, "Hooks.")
        answer = await http.post(
            "/agents/hooked/runs/wait",
            json={"assistant_id": "hooked", "input": user("hi"), "webhook": receiver.url},
            headers=PLATFORM_OPERATOR,
        )
        assert answer.status_code == 200, answer.text
        [delivery] = await receiver.deliveries()
        # Unset, the secret is derived from the deployment key.
        run = delivery.verified(webhooks.secret_for(PLATFORM_KEY))
        assert run["status"] == "success"
        still = await http.post(
            "/agents/hooked/runs",
            json={"assistant_id": "hooked", "webhook": "http://10.0.0.1/hook"},
            headers=PLATFORM_OPERATOR,
        )
        assert still.status_code == 422
        assert "(private)" in still.json()["detail"]


async def test_each_delivery_checks_the_address_again_and_follows_no_redirect(
    receiver: Receiver,
) -> None:
    """A run stored before its URL was refused (or a name that resolves elsewhere by the
    time it ends) is not delivered; a redirect ends a delivery, unfollowed and untried."""
    metrics = Metrics()

    async def counted(outcome: str) -> bool:
        found = metrics.registry.get_sample_value(
            "agentctl_webhook_deliveries_total", {"outcome": outcome}
        )
        return found == 1

    production = Webhooks(WebhookSettings(SECRET, (), attempts=3, first_retry=0.01))
    with metrics.bind():
        production.deliver(receiver.url.replace("127.0.0.1", "localhost"), "r1", {"run_id": "r1"})
    await eventually(lambda: counted("refused"))
    assert receiver.received == []

    receiver.answer = 302
    allowing = Webhooks(WebhookSettings(SECRET, LOOPBACK, attempts=3, first_retry=0.01))
    with metrics.bind():
        allowing.deliver(receiver.url, "r2", {"run_id": "r2"})
    await eventually(lambda: counted("failed"))
    [delivery] = receiver.received
    assert delivery.verified()["run_id"] == "r2"
    for hooks in (production, allowing):
        await hooks.stop()


async def test_a_cancelled_run_posts_itself_interrupted(
    hooked: Running, receiver: Receiver
) -> None:
    thread = await hooked.client.threads.create()
    run: Any = await hooked.client.runs.create(
        thread["thread_id"], "demo", input=user("@sleep 30 @say late"), webhook=receiver.url
    )
    queued: Any = await hooked.client.runs.create(
        thread["thread_id"], "demo", input=user("queued"), webhook=receiver.url
    )

    async def running() -> bool:
        current: Any = await hooked.client.runs.get(thread["thread_id"], run["run_id"])
        return bool(current["status"] == "running")

    await eventually(running)
    await hooked.client.runs.cancel(thread["thread_id"], queued["run_id"])  # still pending
    await hooked.client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    deliveries = await receiver.deliveries(2)
    posted = {d.verified()["run_id"]: d.verified()["status"] for d in deliveries}
    assert posted == {run["run_id"]: "interrupted", queued["run_id"]: "interrupted"}


@pytest.mark.slow
async def test_agentctl_dev_signs_with_the_secret_of_its_environment(
    demo: Path, start_dev: StartDev, dev_env: dict[str, str], receiver: Receiver
) -> None:
    env = {**dev_env, "AGENTCTL_WEBHOOK_SECRET": SECRET}
    dev = start_dev("--config", demo / "agent.toml", "--port", "0", env=env)
    url = dev.ready()
    async with get_client(url=url, api_key=None) as client:
        await client.runs.wait(None, "demo", input=user("from dev"), webhook=receiver.url)
    [delivery] = await receiver.deliveries()
    assert delivery.verified()["status"] == "success"
    assert dev.stop() == 0
    assert SECRET not in dev.out + dev.err
