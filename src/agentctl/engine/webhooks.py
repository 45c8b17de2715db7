"""Webhook deliveries: once a run's end is stored, a POST of the run (as LangGraph Platform
sends it: the run's fields, its final status, `values`, `error`, `webhook_sent_at`) to the
URL the run (or its cron) named, signed (`agentctl.webhooks`).

A delivery runs in the background on the replica that ended the run: it never delays nor
fails the run. An attempt that gets no 2xx answer within the timeout — a 5xx, 408 or 429,
or no answer — is tried again after 1, 2, 4… s, up to `attempts` tries; any other answer
(a redirect is never followed) ends it. The address is checked right before each attempt
(`egress.py`) and the request goes to the address checked. Each delivery ends with one
outcome, counted by `agentctl_webhook_deliveries_total{outcome}`: `delivered`, `failed`
(logged once, without the URL's query string), `refused` (the address may not be reached)
or `dropped` (the replica stopped first: deliveries in flight get what is left of its
shutdown grace; a replica that dies takes its pending retries with it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from agentctl import serde, webhooks
from agentctl.engine import egress
from agentctl.errors import SettingsError
from agentctl.observability import webhook_delivered
from agentctl.storage.base import now

log = logging.getLogger("agentctl.webhooks")

RETRIED_STATUSES = frozenset({408, 429})
USER_AGENT = "agentctl-webhooks"


@dataclass(frozen=True)
class WebhookSettings:
    """How this server delivers webhooks (`AGENTCTL_WEBHOOK_*`, docs/settings.md)."""

    secret: str = field(default_factory=webhooks.new_secret, repr=False)
    # Non-public networks webhooks may reach all the same.
    allowed: tuple[egress.Network, ...] = ()
    timeout: float = 10.0
    attempts: int = 5
    first_retry: float = 1.0  # then doubled at each retry

    def __post_init__(self) -> None:
        webhooks.secret_key(self.secret)  # ValueError for a malformed one

    @classmethod
    def of(
        cls,
        secret: str | None,
        networks: str | None,
        *,
        api_key: str | None = None,
        loopback: bool = False,
        timeout: float = 10.0,
        attempts: int = 5,
    ) -> WebhookSettings:
        """From the settings' values: `secret` (else derived from `api_key`, else random),
        `networks` (plus loopback when `loopback`: `agentctl dev`). `SettingsError` naming
        the variable whose value is malformed."""
        if secret:
            try:
                webhooks.secret_key(secret)
            except ValueError as exc:
                raise SettingsError(
                    f"environment variable AGENTCTL_WEBHOOK_SECRET: {exc}"
                ) from None
        else:
            secret = webhooks.secret_for(api_key) if api_key else webhooks.new_secret()
        try:
            allowed = egress.parse_networks(networks)
        except ValueError as exc:
            raise SettingsError(
                f"environment variable AGENTCTL_WEBHOOK_ALLOW_NETWORKS: {exc}"
            ) from None
        if loopback:
            allowed += egress.LOOPBACK
        return cls(secret, allowed, timeout=timeout, attempts=attempts)


class Webhooks:
    """Checks webhook URLs and delivers runs to them, in the background."""

    def __init__(self, settings: WebhookSettings | None = None) -> None:
        self.settings = settings or WebhookSettings()
        self._key = webhooks.secret_key(self.settings.secret)
        self._tasks: set[asyncio.Task[None]] = set()
        self._client: httpx.AsyncClient | None = None

    async def check(self, url: str) -> None:
        """`egress.Refused` saying why, when runs may not be delivered to `url`: not an
        http(s) URL, or a host that is (or resolves to) an address they may not reach. A
        name that does not resolve yet is let through (each delivery resolves it again)."""
        target = egress.parse_target(url)
        try:
            addresses = await egress.resolve(target.host, target.port)
        except egress.Unresolved:
            return
        egress.check_addresses(target, addresses, self.settings.allowed)

    def deliver(self, url: str, message_id: str, payload: dict[str, Any]) -> None:
        """Send `payload` to `url` in the background (see the module's doc)."""
        task = asyncio.create_task(self._deliver(url, message_id, payload), name="agentctl-webhook")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def stop(self, grace: float = 0.0) -> None:
        """Give deliveries in flight `grace` seconds, then drop them; close the client."""
        tasks = list(self._tasks)
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        tasks = [task for task in tasks if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if tasks:
            log.warning("%d webhook deliveries were dropped: the server stopped first", len(tasks))
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- one delivery ----------------------------------------------------------------------

    async def _deliver(self, url: str, message_id: str, payload: dict[str, Any]) -> None:
        try:
            target = egress.parse_target(url)
        except egress.Refused as exc:  # checked at submit: only a run stored before that was
            self._ended("refused", message_id, "the URL it named", str(exc))
            return
        attempts = max(1, self.settings.attempts)
        problem = ""
        try:
            for attempt in range(1, attempts + 1):
                try:
                    addresses = await egress.checked_addresses(target, self.settings.allowed)
                except egress.Unresolved as exc:
                    problem, retry = str(exc), True
                except egress.Refused as exc:
                    self._ended("refused", message_id, target.safe, str(exc))
                    return
                else:
                    problem, retry = await self._attempt(target, addresses[0], message_id, payload)
                    if not problem:
                        webhook_delivered("delivered")
                        return
                if not retry or attempt == attempts:
                    break
                await asyncio.sleep(self.settings.first_retry * 2 ** (attempt - 1))
        except asyncio.CancelledError:
            webhook_delivered("dropped")
            raise
        except Exception as exc:  # a bug of ours: the delivery ends, the server goes on
            self._ended("failed", message_id, target.safe, f"{type(exc).__name__}: {_short(exc)}")
            return
        tries = f"{attempt} attempt{'s' if attempt > 1 else ''}"
        self._ended("failed", message_id, target.safe, f"{problem} (after {tries})")

    async def _attempt(
        self,
        target: egress.Target,
        address: egress.Address,
        message_id: str,
        payload: dict[str, Any],
    ) -> tuple[str, bool]:
        """One POST to `address`: ("", False) when delivered, else what went wrong and
        whether to try again."""
        payload = {**payload, "webhook_sent_at": now()}
        body = serde.dumps(payload)
        headers = {
            **webhooks.sign(self.settings.secret, message_id, body),
            "content-type": "application/json",
            "host": target.host_header,
            "user-agent": USER_AGENT,
        }
        extensions = {"sni_hostname": target.host} if target.parts.scheme == "https" else {}
        client = self._client_now()
        try:
            async with asyncio.timeout(self.settings.timeout):
                request = client.build_request(
                    "POST", target.pinned(address), content=body, headers=headers,
                    extensions=extensions,
                )  # fmt: skip
                response = await client.send(request, stream=True)
                await response.aclose()  # the answer's body is not read
        except TimeoutError:
            return f"no answer within {self.settings.timeout:g} s", True
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {_short(exc)}", True
        status = response.status_code
        if 200 <= status < 300:
            return "", False
        return f"answered HTTP {status}", status >= 500 or status in RETRIED_STATUSES

    def _client_now(self) -> httpx.AsyncClient:
        if self._client is None:
            # No proxy from the environment: the address checked is the one reached.
            # No pooled connection either: one is matched by the address alone, so another
            # host name pinned to the same address would skip its own TLS certificate check.
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                timeout=self.settings.timeout,
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._client

    @staticmethod
    def _ended(outcome: str, message_id: str, where: str, why: str) -> None:
        webhook_delivered(outcome)
        log.warning("webhook of run %s to %s %s: %s", message_id, where,
                    "was refused" if outcome == "refused" else "failed", why)  # fmt: skip


def _short(exc: BaseException) -> str:
    """An exception's message, on one line and without any URL it may quote."""
    text = " ".join(str(exc).split()) or "no detail"
    return text.split(" for url ", 1)[0][:200]


def payload_of(
    run_view: Mapping[str, Any],
    *,
    status: str,
    values: Any,
    error: Mapping[str, Any] | None,
    started_at: datetime | None,
) -> dict[str, Any]:
    """What LangGraph Platform posts: the run, its final status, the thread's values after
    it, and the error's message when it failed (`webhook_sent_at` is added per attempt)."""
    ended = now()
    payload: dict[str, Any] = {
        **run_view,
        "status": status,
        "updated_at": ended,
        "values": values,
        "run_started_at": started_at,
        "run_ended_at": ended,
    }
    if error is not None:
        payload["error"] = str(error.get("message") or error.get("error") or "")
    return payload
