"""The compact form of message events: the tokens of one model call repeat its metadata, which
is stored once; each token's compact form gives back exactly the bytes that were sent."""

from __future__ import annotations

from typing import Any

from agentctl import serde
from agentctl.storage import compact


def token(content: str, metadata: dict[str, Any]) -> bytes:
    return serde.dumps([{"type": "AIMessageChunk", "content": content, "id": "a1"}, metadata])


METADATA = {"run_id": "r1", "langgraph_node": "model", "versions": {"x": "y" * 600}}


def encoded_in_turn(datas: list[bytes]) -> list[tuple[bytes, compact.Parts]]:
    """Each message event encoded against the head of the one before, as a log does (one
    that has no compact form is stored as it is, and leaves no head)."""
    head: compact.Head | None = None
    out: list[tuple[bytes, compact.Parts]] = []
    for data in datas:
        encoded = compact.encode_after("messages", data, head)
        if encoded is None:
            out.append((data, {}))
            head = None
            continue
        stored, parts, head = encoded
        out.append((stored, parts))
    return out


def test_tokens_after_the_first_are_cut_from_their_bytes_as_parsing_would() -> None:
    datas = [token(word, METADATA) for word in ("an", " answer", ' "quoted" \\ ', "")]
    for data, (stored, parts) in zip(datas, encoded_in_turn(datas), strict=True):
        assert (stored, parts) == compact.encode("messages", data)  # as if parsed alone
        assert compact.decode(stored, parts) == data
        assert len(stored) < len(data) / 3


def test_a_token_holding_the_holes_text_or_other_metadata_reads_back_exactly() -> None:
    other = {**METADATA, "langgraph_node": "tools"}
    datas = [token("a", METADATA), token("\x000", METADATA), token("a", METADATA)]
    datas += [token("b", other), token("c", other)]
    encoded = encoded_in_turn(datas)
    for data, (stored, parts) in zip(datas, encoded, strict=True):
        assert compact.decode(stored, parts) == data
    assert encoded[1] == (datas[1], {})  # kept as it is: its text is the hole's
    assert encoded[0][1] != encoded[3][1]  # the new metadata is a part of its own
    assert encoded[3][1] == encoded[4][1]
