"""The Redis event log: appends per second, and how long an appended event takes to reach a
live subscriber of another RedisEventLog (another client, as another replica would be).

Prints, for one thread and for N threads appended to at once (each appender awaits its
append before the next, as a run does), appends/s and append-to-subscriber latency
p50/p95; then appends/s when N appenders share one thread (they are pipelined); then what
a `values` event costs to append (wall and this process's CPU, per append) when the
conversation it repeats has grown to `--messages` messages, as a long chat's does.

    python bench/redis_events.py [--events 2000] [--threads 16] [--messages 150] [--uvloop]
    python bench/redis_events.py --only conversation --messages 150

Uses REDIS_URL, else a local or throwaway Redis (agentctl.testing.services).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

from agentctl import serde
from agentctl.storage.redis import RedisEventLog, connect_redis
from agentctl.testing import services


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def scenario(
    writer: RedisEventLog, reader: RedisEventLog, threads: int, events: int
) -> tuple[float, list[float]]:
    """`threads` appenders, `events` appends each; appends/s and latencies (ms)."""
    ids = [f"bench-{uuid.uuid4().hex[:8]}" for _ in range(threads)]
    subscriptions = [reader.subscribe(thread_id) for thread_id in ids]
    for thread_id in ids:
        await reader.read(thread_id, after=None)  # the feed is up: as a follower does
    await asyncio.sleep(0.05)  # and its subscription confirmed
    latencies: list[float] = []

    async def receive(index: int) -> None:
        for _ in range(events):
            event = await subscriptions[index].next()
            latencies.append((time.perf_counter_ns() - int(event.data)) / 1e6)

    async def append(index: int) -> None:
        for _ in range(events):
            await writer.append(ids[index], "run", "values", b"%d" % time.perf_counter_ns())

    receivers = [asyncio.create_task(receive(i)) for i in range(threads)]
    started = time.perf_counter()
    await asyncio.gather(*(append(i) for i in range(threads)))
    elapsed = time.perf_counter() - started
    await asyncio.wait_for(asyncio.gather(*receivers), 30)
    for subscription in subscriptions:
        subscription.close()
    for thread_id in ids:
        await writer.delete(thread_id)
    return threads * events / elapsed, latencies


async def shared_thread(writer: RedisEventLog, appenders: int, events: int) -> float:
    thread_id = f"bench-{uuid.uuid4().hex[:8]}"

    async def append() -> None:
        for _ in range(events):
            await writer.append(thread_id, "run", "values", b"{}")

    started = time.perf_counter()
    await asyncio.gather(*(append() for _ in range(appenders)))
    elapsed = time.perf_counter() - started
    await writer.delete(thread_id)
    return appenders * events / elapsed


def message(index: int) -> dict[str, object]:
    """A message of a chat's state, about the size LangChain serializes one to."""
    kind = "human" if index % 2 == 0 else "ai"
    return {
        "content": f"message {index}: " + "lorem ipsum dolor sit amet " * 12,
        "additional_kwargs": {},
        "response_metadata": {"model_name": "scripted", "finish_reason": "stop"}
        if kind == "ai"
        else {},
        "type": kind,
        "name": None,
        "id": f"run-{uuid.uuid4()}",
        **(
            {"tool_calls": [], "usage_metadata": {"input_tokens": index, "output_tokens": 9}}
            if kind == "ai"
            else {}
        ),
    }


async def conversation(
    writer: RedisEventLog, messages: int, window: int = 20
) -> tuple[float, float]:
    """One `values` event per message added, up to `messages`; the mean wall and CPU time
    (ms) of the last `window` appends."""
    thread_id = f"bench-{uuid.uuid4().hex[:8]}"
    state: list[dict[str, object]] = []
    walls: list[float] = []
    cpus: list[float] = []
    for index in range(messages):
        state.append(message(index))
        data = serde.dumps({"messages": state, "todos": []})
        wall, cpu = time.perf_counter(), time.process_time()
        await writer.append(thread_id, "run", "values", data)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    await writer.delete(thread_id)
    return statistics.mean(walls[-window:]) * 1e3, statistics.mean(cpus[-window:]) * 1e3


async def main(events: int, threads: int, messages: int, only: str | None) -> None:
    url = os.environ.get("REDIS_URL") or services.redis_url()
    prefix = f"agentctl-bench-{uuid.uuid4().hex[:8]}"
    writer_client, reader_client = await connect_redis(url), await connect_redis(url)
    writer = RedisEventLog(writer_client, prefix=prefix, ttl_seconds=600)
    reader = RedisEventLog(reader_client, prefix=prefix, ttl_seconds=600)
    try:
        if only == "conversation":
            await conversation(writer, 20)  # warm-up
            wall, cpu = await conversation(writer, messages)
            print(
                f"Redis event log at {url}: a values event at {messages} messages: "
                f"{wall:.3f} ms per append, {cpu:.3f} ms CPU of this process"
            )
            return
        await scenario(writer, reader, 1, 200)  # warm-up
        print(f"Redis event log at {url} ({events} appends per thread)")
        for count in (1, threads):
            rate, latencies = await scenario(writer, reader, count, events)
            p50, p95 = statistics.median(latencies), percentile(latencies, 0.95)
            print(
                f"  {count:>2} thread(s): {rate:>8.0f} appends/s   "
                f"append→subscriber p50 {p50:.3f} ms  p95 {p95:.3f} ms"
            )
        rate = await shared_thread(writer, threads, events // threads or 1)
        print(f"  {threads:>2} appenders on one thread: {rate:>8.0f} appends/s (pipelined)")
        wall, cpu = await conversation(writer, messages)
        print(
            f"  a values event at {messages} messages: {wall:.3f} ms per append, "
            f"{cpu:.3f} ms CPU of this process"
        )
    finally:
        await writer.close()
        await reader.close()
        await writer_client.aclose()
        await reader_client.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="appends per thread")
    parser.add_argument("--threads", type=int, default=16, help="threads appended to at once")
    parser.add_argument(
        "--messages", type=int, default=150, help="the conversation's length, for values events"
    )
    parser.add_argument("--only", choices=["conversation"], help="run only this scenario")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop, as the server")
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    asyncio.run(main(args.events, args.threads, args.messages, args.only))
