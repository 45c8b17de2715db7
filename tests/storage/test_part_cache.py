"""The parts an event log keeps in memory (`compact.PartCache`) are bounded in bytes and in
number: a process serving many threads does not grow past the bounds, and keeps the newest
parts of the threads it serves."""

from __future__ import annotations

import hashlib

from agentctl.storage import compact


def parts_of(thread: int, count: int, size: int) -> dict[str, bytes]:
    return {
        hashlib.sha256(f"{thread}-{i}".encode()).hexdigest(): bytes([i % 256]) * size
        for i in range(count)
    }


def test_many_threads_of_long_messages_stay_within_the_bound() -> None:
    cache = compact.PartCache(max_bytes=1024 * 1024)
    threads = {n: parts_of(n, 20, 8 * 1024) for n in range(100)}  # 16 MiB in all
    for n, parts in threads.items():
        cache.keep(f"thread-{n}", parts)
        cache.keep(f"thread-{n}", parts)  # kept again: counted once
    held = sum(
        len(part)
        for scope in range(100)
        for part in cache.split(f"thread-{scope}", threads[scope])[0].values()
    )
    assert 0.8 * 1024 * 1024 <= held <= 1024 * 1024
    # The newest thread's parts are all there, the oldest's are gone.
    assert cache.split("thread-99", threads[99]) == (threads[99], [])
    assert cache.split("thread-0", threads[0]) == ({}, sorted(threads[0]))


def test_a_forgotten_thread_frees_its_room() -> None:
    cache = compact.PartCache(max_bytes=256 * 1024)
    first, second = parts_of(1, 10, 20 * 1024), parts_of(2, 10, 20 * 1024)
    cache.keep("one", first)
    cache.forget("one")
    cache.keep("two", second)
    assert cache.split("two", second) == (second, [])
    assert cache.split("one", first) == ({}, sorted(first))


def test_many_short_parts_stay_within_the_count() -> None:
    # Long-lived small objects scattered among short-lived ones pin the heap's pages: the
    # cache holds few of them, whatever their bytes.
    cache = compact.PartCache(max_parts=100)
    threads = {n: parts_of(n, 50, 40) for n in range(10)}
    for n, parts in threads.items():
        cache.keep(f"thread-{n}", parts)
    assert cache.split("thread-9", threads[9]) == (threads[9], [])
    assert len(cache.split("thread-8", threads[8])[0]) == 50
    assert cache.split("thread-7", threads[7]) == ({}, sorted(threads[7]))
