"""The compact form of a stored event: what repeats from event to event is kept once.

A `messages` event (`[chunk, metadata]`, one per streamed token) repeats its run's ~1 KB of
metadata; a `values` event repeats every message of the thread so far. In the compact form
those pieces are *parts*, stored once per thread under the digest of their bytes, and the
event keeps a template with a hole for each:

    b"\\0" + JSON header [[kind, digest or [digests]], ...] + b"\\n" + template

`kind` "p": the hole is the part itself (a message's metadata); "l": a JSON array of the parts
(a list of `values`). The template is the event's JSON with each hole as the string
`"\\u0000<index>"`. An event is only compacted when its compact form gives back exactly its
bytes, so a reader always sees what was stored and sent live; events stored before this
form existed (plain JSON, never starting with a NUL byte) are read as they are.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from agentctl import serde

MARK = b"\x00"
MIN_BYTES = 256  # smaller events are kept as they are
Parts = dict[str, bytes]


def digest(part: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.blake2b(part, digest_size=12).digest()).decode()


def _hole(index: int) -> bytes:
    return b'"\\u0000' + str(index).encode() + b'"'


def compacted(data: bytes) -> bool:
    return data[:1] == MARK


def encode(event: str, data: bytes) -> tuple[bytes, Parts] | None:
    """The compact form of `data` and the parts it refers to; None when it has none (it is
    kept as it is)."""
    encoded = encode_after(event, data, None)
    return None if encoded is None else encoded[:2]


@dataclass(frozen=True)
class Head:
    """The first list of a `values` event (the conversation, in a thread's state): its key,
    and its elements' digests and bytes."""

    key: str
    digests: list[str]
    parts: list[bytes]

    def cut(self, data: bytes) -> bytes | None:
        """`data` with these elements taken off the start of its list `key`; None when that
        list does not start with them."""
        opening = serde.dumps(self.key) + b":["
        needle = opening + b",".join(self.parts)
        at = data.find(needle)
        if at < 0:
            return None
        end = at + len(needle)
        follows = data[end : end + 1]
        if follows not in (b",", b"]"):
            return None
        return data[:at] + opening + data[end + (follows == b",") :]


def encode_after(
    event: str, data: bytes, head: Head | None
) -> tuple[bytes, Parts, Head | None] | None:
    """As `encode`, for an event that may repeat `head`, the head of the thread's previous
    event of the same name. A `values` event's elements are cut out of `data` before it is
    parsed, so that a thread's next state costs what it adds, not the whole conversation
    again; a message event repeating its predecessor's metadata is not parsed at all.
    Returns the parts that `head` does not hold (a message event's metadata always), and
    this event's own head."""
    if len(data) < MIN_BYTES or compacted(data):
        return None
    base = event.split("|", 1)[0]
    if base not in ("messages", "values"):
        return None
    if base == "messages":
        return _message_after(data, head) if head is not None else _message(data)
    source = head.cut(data) if head is not None and head.parts else None
    if source is None:
        source, head = data, None
    try:
        value = serde.loads(source)
    except orjson.JSONDecodeError:
        return None
    parts: Parts = {}
    header: list[list[Any]] = []

    def part(item: Any) -> str:
        raw = serde.dumps(item)
        key = digest(raw)
        parts[key] = raw
        return key

    first: Head | None = None
    if not isinstance(value, dict):
        return None
    template = dict(value)
    for key, item in value.items():
        cut = head is not None and key == head.key
        if isinstance(item, list) and (item or cut):
            template[key] = f"\x00{len(header)}"
            digests = [part(element) for element in item]
            raws = [parts[d] for d in digests]
            if cut and head is not None:
                digests, raws = head.digests + digests, head.parts + raws
            header.append(["l", digests])
            if first is None:
                first = Head(key, digests, raws)
    if not header:
        return None
    compact = MARK + serde.dumps(header) + b"\n" + serde.dumps(template)
    known = dict(zip(head.digests, head.parts, strict=True)) if head is not None else {}
    if len(compact) >= len(data) or decode(compact, known | parts) != data:
        # Not smaller, or not exactly the same once read back (the head was found
        # elsewhere than at the start of its list: it is tried without).
        return encode_after(event, data, None) if head is not None else None
    return compact, parts, first


def _message(data: bytes) -> tuple[bytes, Parts, Head | None] | None:
    """The compact form of a message event (`[chunk, metadata]`): its metadata a part. Its
    head is that part, which the run's next tokens (of the same model call) repeat."""
    try:
        value = serde.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], dict)):
        return None
    raw = serde.dumps(value[1])
    key = digest(raw)
    compact = MARK + serde.dumps([["p", key]]) + b"\n" + serde.dumps([value[0], "\x000"])
    if len(compact) >= len(data) or decode(compact, {key: raw}) != data:
        return None
    return compact, {key: raw}, Head("", [key], [raw])


def _message_after(data: bytes, head: Head) -> tuple[bytes, Parts, Head | None] | None:
    """As `_message`, for a message event that may end with the metadata of `head` (the
    thread's previous one): then cut from its bytes as they are, unparsed, which gives
    them back exactly (the hole is nowhere else in them)."""
    (key,), (raw,) = head.digests, head.parts
    suffix = b"," + raw + b"]"
    start = len(data) - len(suffix)
    if not data.endswith(suffix) or data.find(_hole(0), 0, start) >= 0:
        return _message(data)
    compact = MARK + b'[["p","' + key.encode() + b'"]]\n' + data[: start + 1] + _hole(0) + b"]"
    if len(compact) >= len(data):
        return None
    return compact, {key: raw}, head


def needed(data: bytes) -> list[str]:
    """The digests of the parts `data` (compact, or not: none) refers to."""
    if not compacted(data):
        return []
    header = serde.loads(data[1 : data.index(b"\n")])
    found: list[str] = []
    for kind, ref in header:
        if kind == "p":
            found.append(ref)
        else:
            found.extend(ref)
    return found


def decode(data: bytes, parts: Mapping[str, bytes]) -> bytes:
    """The event's bytes as they were sent: `data` itself when it is not compact. Raises
    KeyError when a part is missing."""
    if not compacted(data):
        return data
    split = data.index(b"\n")
    header = serde.loads(data[1:split])
    out = data[split + 1 :]
    for index, (kind, ref) in enumerate(header):
        filling = parts[ref] if kind == "p" else b"[" + b",".join(parts[k] for k in ref) + b"]"
        out = out.replace(_hole(index), filling, 1)
    return out


def all_needed(datas: Iterable[bytes]) -> set[str]:
    return {key for data in datas for key in needed(data)}


def bounded(events: list[Any], max_bytes: int) -> list[Any]:
    """`events` (read back) up to the one whose data brings them to `max_bytes`: a page's
    bound in bytes holds for what it holds once filled, not for its compact form."""
    size = 0
    for index, event in enumerate(events):
        size += len(event.data)
        if size >= max_bytes:
            return events[: index + 1]
    return events


T = TypeVar("T")


# What a process keeps of the parts it read or wrote lately, per event log (`PartCache`):
# few enough that, scattered among short-lived objects, they pin little of the heap.
CACHED_PARTS = 512
CACHED_PART_BYTES = 2 * 1024 * 1024


class Heads(Generic[T]):
    """What a process keeps of the last `values` and message event of each (thread, event
    name), to encode the next one against (a `Head`, with whatever its log needs beside
    it): at most `size` of each kind, the least recently kept dropped first. A message
    event's head is its metadata (a KB); a `values` event's, the conversation."""

    def __init__(self, size: int = 32, messages: int = 1024) -> None:
        self._sizes = {False: size, True: messages}
        self._heads: dict[bool, dict[tuple[str, str], T]] = {False: {}, True: {}}

    def get(self, thread_id: str, event: str) -> T | None:
        return self._heads[event.startswith("messages")].get((thread_id, event))

    def keep(self, thread_id: str, event: str, head: T | None) -> None:
        """Keep `head` as the thread's last (None: the thread has none any more)."""
        kind = event.startswith("messages")
        heads = self._heads[kind]
        heads.pop((thread_id, event), None)
        if head is not None:
            heads[(thread_id, event)] = head
            if len(heads) > self._sizes[kind]:
                del heads[next(iter(heads))]

    def forget(self, thread_id: str) -> None:
        for heads in self._heads.values():
            for key in [key for key in heads if key[0] == thread_id]:
                del heads[key]


class PartCache:
    """The parts read or written lately, per scope (a thread, a stream), the least recently
    used dropped first past `max_parts` or `max_bytes`: a replay of a busy thread's newest
    messages reads none, and an append does not store again what its thread holds."""

    PER_PART = 200  # what a part costs beside its bytes: its key, digest and entry

    def __init__(self, max_parts: int = CACHED_PARTS, max_bytes: int = CACHED_PART_BYTES) -> None:
        self.max_parts = max_parts
        self.max_bytes = max_bytes
        self._parts: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0

    def split(self, scope: str, wanted: Iterable[str]) -> tuple[dict[str, bytes], list[str]]:
        """The parts of `wanted` held here, and the digests (sorted) to read elsewhere."""
        found: dict[str, bytes] = {}
        for key in wanted:
            part = self._parts.get((scope, key))
            if part is not None:
                self._parts.move_to_end((scope, key))
                found[key] = part
        return found, sorted(set(wanted) - found.keys())

    def keep(self, scope: str, parts: Mapping[str, bytes]) -> None:
        for key, part in parts.items():
            self._drop((scope, key))
            self._parts[(scope, key)] = part
            self._bytes += len(part) + self.PER_PART
        while self._parts and (len(self._parts) > self.max_parts or self._bytes > self.max_bytes):
            self._drop(next(iter(self._parts)))

    def forget(self, scope: str) -> None:
        for key in [key for key in self._parts if key[0] == scope]:
            self._drop(key)

    def clear(self) -> None:
        self._parts.clear()
        self._bytes = 0

    def _drop(self, key: tuple[str, str]) -> None:
        part = self._parts.pop(key, None)
        if part is not None:
            self._bytes -= len(part) + self.PER_PART
