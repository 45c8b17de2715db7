"""PostgreSQL or Redis going away under streamed runs, as a chaos tester does it, and what
the clients saw: which runs did not end `success`, which events a client missed or got
twice, and the HTTP statuses answered while the service was down and after it was back.

Used by the outage tests (which want zeros) and by `bench/outages.py` (which prints the
figures). Each run's events are checked per client against the run's whole stored stream,
read again at the end: a client that streamed the run and one that joined it on another
replica each must have every event once, in order. The runs may be of several agents of a
platform, each at its own base URL (`platform_agents`); the platform's own routes are asked
too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

# A run that crosses a step boundary (a tool call and its checkpoints) every second for a
# few seconds, then streams tokens, so an outage of a few seconds falls in the middle of it.
SCRIPT = "\n".join(
    [
        *(
            f"@sleep {0 if n == 'a' else 1} @call write_file "
            f'{{"file_path": "/{n}.txt", "content": "{n}"}}'
            for n in "abcd"
        ),
        "@slow 0.2 @say one two three four five six seven eight nine ten",
    ]
)
MODES = ["values", "updates", "messages-tuple"]
# The platform's own routes at each replica's root, asked once while the service is down.
PLATFORM_ROUTES = ("/ok", "/platform/agents", "/metrics")


@dataclass
class OutageReport:
    runs: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # run id -> how it ended
    missing: int = 0  # events some client did not get
    duplicated: int = 0  # events some client got more than once
    events: int = 0  # events of all runs, as stored
    during: Counter[int] = field(default_factory=Counter)  # API statuses while down
    after: Counter[int] = field(default_factory=Counter)  # ... once the service was back
    ok_during: Counter[int] = field(default_factory=Counter)  # agents' /ok while down
    # The platform's own routes while down, by path, and GET /platform/agents once back.
    platform_during: dict[str, Counter[int]] = field(default_factory=dict)
    platform_after: Counter[int] = field(default_factory=Counter)
    retry_after: set[str] = field(default_factory=set)  # Retry-After headers of the 503s
    problems: list[str] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)
    finished_after: float = 0.0  # seconds from the service's return to the last run's end

    def lines(self) -> list[str]:
        return [
            f"runs {self.runs}, not ending success {len(self.failed)} {self.failed or ''}",
            f"events {self.events}, missed {self.missing}, duplicated {self.duplicated}",
            f"every run ended {self.finished_after:.1f} s after the service was back",
            f"API while down {dict(self.during)}, after {dict(self.after)}",
            f"/ok while down {dict(self.ok_during)}",
            "platform while down "
            + str({path: dict(counts) for path, counts in self.platform_during.items()})
            + f", /platform/agents after {dict(self.platform_after)}",
            *self.problems,
            ", ".join(self.timeline),
        ]


def platform_agents(urls: list[str], names: list[str]) -> dict[str, list[str]]:
    """Each agent of `names` with its base URL on each replica of `urls` (`<url>/agents/<name>`),
    as `outage_under_runs` takes them."""
    return {name: [f"{url}/agents/{quote(name, safe='')}" for url in urls] for name in names}


async def outage_under_runs(
    urls: list[str],
    api_key: str,
    agents: Mapping[str, list[str]],
    outage: Callable[[], Awaitable[None]],
    restore: Callable[[], Awaitable[None]],
    *,
    runs: int = 6,
    down_seconds: float = 4.0,
    timeout: float = 90.0,
) -> OutageReport:
    """Start `runs` streamed runs of each agent of `agents` (its assistant id -> its base
    URL on each replica: the replica's own URL for the one agent a platform serves at its
    root), spread over the replicas at `urls`, each joined by a second client on the next
    replica; call `outage()` once they are streaming, wait `down_seconds`, call `restore()`,
    and report once every run has ended (or `timeout`). Meanwhile each agent's API and the
    platform's own routes are read on every replica."""
    clients = {
        name: [get_client(url=url, api_key=api_key, timeout=timeout) for url in bases]
        for name, bases in agents.items()
    }
    try:  # closed whatever happens: an open client's sockets outlive the test that failed
        return await _under_runs(
            clients, urls, api_key, agents, outage, restore, runs, down_seconds, timeout
        )
    finally:
        for each in clients.values():
            for client in each:
                await client.aclose()


async def _under_runs(
    clients: Mapping[str, list[LangGraphClient]],
    urls: list[str],
    api_key: str,
    agents: Mapping[str, list[str]],
    outage: Callable[[], Awaitable[None]],
    restore: Callable[[], Awaitable[None]],
    runs: int,
    down_seconds: float,
    timeout: float,
) -> OutageReport:
    lanes = [(name, k) for name in agents for k in range(runs)]  # (agent, its run number)
    report = OutageReport(runs=len(lanes))
    threads = [str(uuid.uuid4()) for _ in lanes]
    for (name, k), thread_id in zip(lanes, threads, strict=True):
        await clients[name][k % len(clients[name])].threads.create(thread_id=thread_id)
    watched = {name: threads[lanes.index((name, 0))] for name in agents}  # a thread of each
    seen: dict[str, list[list[str]]] = {}  # run id -> each client's event ids
    run_ids: dict[str, str] = {}  # thread -> run id
    started = asyncio.Event()
    t0 = time.monotonic()

    async def stream(i: int, thread_id: str) -> None:
        name, k = lanes[i]
        client = clients[name][k % len(clients[name])]
        ids: list[str] = []
        async for part in client.runs.stream(
            thread_id,
            name,
            input={"messages": [{"role": "user", "content": SCRIPT}]},  # type: ignore[dict-item]
            stream_mode=MODES,  # type: ignore[arg-type]
        ):
            if part.event == "metadata" and thread_id not in run_ids:
                run_ids[thread_id] = part.data["run_id"]
                joiner.append(asyncio.create_task(join(i, thread_id, part.data["run_id"])))
                if len(run_ids) == len(lanes):
                    started.set()
            if part.id:
                ids.append(part.id)
        seen.setdefault(run_ids[thread_id], []).append(ids)
        report.timeline.append(f"stream {i} ended {time.monotonic() - t0:.1f}")

    async def join(i: int, thread_id: str, run_id: str) -> None:
        name, k = lanes[i]
        client = clients[name][(k + 1) % len(clients[name])]
        ids = [
            part.id
            async for part in client.runs.join_stream(thread_id, run_id, last_event_id="-")
            if part.id
        ]
        seen.setdefault(run_id, []).append(ids)

    joiner: list[asyncio.Task[None]] = []
    streams = [asyncio.create_task(stream(i, t)) for i, t in enumerate(threads)]
    back = asyncio.Event()
    watch = [(f"{base}/threads/{watched[name]}", False) for name in agents for base in agents[name]]
    watch += [(f"{url}/platform/agents", True) for url in urls]
    poller = asyncio.create_task(_poll(watch, api_key, back, report))
    begun = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            await started.wait()
            await asyncio.sleep(0.5)  # well into the runs: the first tool call is done
            begun = time.monotonic()
            await outage()
            report.timeline.append(f"down {time.monotonic() - begun:.1f}")
            await asyncio.gather(
                asyncio.sleep(down_seconds),
                *(
                    _while_down(base, api_key, watched[name], back, report)
                    for name in agents
                    for base in agents[name]
                ),
                *(_platform_while_down(url, api_key, back, report) for url in urls),
            )
            await restore()
            back.set()
            report.timeline.append(f"back {time.monotonic() - begun:.1f}")
            restored = time.monotonic()
            done = await asyncio.gather(*streams, return_exceptions=True)
            done += await asyncio.gather(*joiner, return_exceptions=True)
            report.finished_after = time.monotonic() - restored
        for result in done:
            if isinstance(result, BaseException):
                report.problems.append(f"a client failed: {type(result).__name__}: {result}")
        await asyncio.sleep(1.0)  # the poller sees the service back
    except TimeoutError:
        still = sum(not task.done() for task in [*streams, *joiner])
        report.problems.append(
            f"{still} client streams were still open {time.monotonic() - begun:.0f} s after "
            "the outage began"
        )
    finally:
        poller.cancel()
        for task in [*streams, *joiner]:
            task.cancel()
    agent_of = {thread_id: name for (name, _), thread_id in zip(lanes, threads, strict=True)}
    for thread_id, run_id in run_ids.items():
        client = clients[agent_of[thread_id]][0]
        run = await client.runs.get(thread_id, run_id)
        if run["status"] != "success":
            report.failed[run_id] = run["status"]
        stored = await stored_ids(client, thread_id, run_id)
        report.events += len(stored)
        for ids in seen.get(run_id, []):
            counts = Counter(ids)
            report.duplicated += sum(n - 1 for n in counts.values())
            report.missing += len(set(stored) - set(counts))
    return report


async def stored_ids(client: Any, thread_id: str, run_id: str) -> list[str]:
    """The ids of the run's stored events (as far as they go when it never ended)."""
    ids: list[str] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(10):
            async for part in client.runs.join_stream(thread_id, run_id, last_event_id="-"):
                if part.id:
                    ids.append(part.id)
    return ids


async def _while_down(
    url: str, api_key: str, thread_id: str, back: asyncio.Event, report: OutageReport
) -> None:
    """Read a thread and `/ok` of the agent at `url` once the service is down."""
    async with httpx.AsyncClient(headers={"x-api-key": api_key}, timeout=10) as http:
        answer = await http.get(f"{url}/threads/{thread_id}")
        ok = await http.get(f"{url}/ok")
    if back.is_set():
        report.problems.append(f"{url}: answered only once the service was back")
        return
    report.during[answer.status_code] += 1
    report.ok_during[ok.status_code] += 1
    if answer.status_code == 503:
        report.retry_after.add(answer.headers.get("retry-after", ""))


async def _platform_while_down(
    url: str, api_key: str, back: asyncio.Event, report: OutageReport
) -> None:
    """Ask the platform's own routes of the replica at `url` once the service is down, all
    at once (each may wait for a connection as long as the outage lasts)."""
    async with httpx.AsyncClient(headers={"x-api-key": api_key}, timeout=10) as http:
        answers = await asyncio.gather(*(http.get(f"{url}{path}") for path in PLATFORM_ROUTES))
    if back.is_set():
        report.problems.append(f"{url}: the platform answered only once the service was back")
        return
    for path, answer in zip(PLATFORM_ROUTES, answers, strict=True):
        report.platform_during.setdefault(path, Counter())[answer.status_code] += 1
        if answer.status_code >= 500 and answer.status_code != 503:
            report.problems.append(f"{url}{path}: {answer.status_code} {answer.text}")
        if answer.status_code == 503:
            report.retry_after.add(answer.headers.get("retry-after", ""))


async def _poll(
    watch: list[tuple[str, bool]], api_key: str, back: asyncio.Event, report: OutageReport
) -> None:
    """GET every URL of `watch` (with whether it is the platform's) every 0.1 s: no answer
    may be a 500, and once the service is back each is noted."""
    async with httpx.AsyncClient(headers={"x-api-key": api_key}, timeout=10) as http:
        while True:
            for url, platform in watch:
                was_back = back.is_set()  # then the request was sent once it was back
                try:
                    answer = await http.get(url)
                except httpx.HTTPError as exc:
                    report.problems.append(f"{url}: {type(exc).__name__}")
                    continue
                if answer.status_code >= 500 and answer.status_code != 503:
                    report.problems.append(f"{url}: {answer.status_code} {answer.text}")
                if was_back:
                    (report.platform_after if platform else report.after)[answer.status_code] += 1
            await asyncio.sleep(0.1)


async def in_thread(action: Callable[[], Any]) -> None:
    """Run a blocking `action` (stopping or starting a server) off the event loop."""
    await asyncio.to_thread(action)
