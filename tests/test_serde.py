"""The wire's JSON of langchain messages: their fields as they are, the same as `model_dump`."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from agentctl import serde


def dumped(value: Any) -> bytes:
    """What `serde.dumps` gave before messages went to orjson as their fields."""

    def default(value: Any) -> Any:
        dump = getattr(value, "model_dump", None)
        return dump() if callable(dump) else serde._default(value)

    return orjson.dumps(value, default=default, option=serde._OPTIONS)


def messages() -> list[BaseMessage]:
    with_extra_keys = AIMessage(
        content=[{"type": "text", "text": "hi", "extras": {"a": 1}}],
        tool_calls=[{"name": "f", "args": {"a": [1, 2]}, "id": "call-1", "type": "tool_call"}],
        usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5},
        something="an extra field",
    )
    with_extra_keys.tool_calls[0]["unknown"] = 1
    return [
        AIMessageChunk(content="tok", id="lc_run--1", response_metadata={"model_provider": "x"}),
        AIMessageChunk(
            content="",
            tool_call_chunks=[
                {"name": "write_file", "args": '{"pa', "id": "c1", "index": 0, "type": None}
            ],
            chunk_position="last",
        ),
        with_extra_keys,
        HumanMessage(content="hello", id="h1", additional_kwargs={"nested": AIMessage("n")}),
        SystemMessage(content="be brief", name="sys"),
        ToolMessage(content="done", tool_call_id="call-1", artifact={"set": {1}}, status="error"),
    ]


@pytest.mark.parametrize("message", messages(), ids=lambda m: type(m).__name__)
def test_a_message_is_written_as_model_dump_writes_it(message: BaseMessage) -> None:
    assert serde.dumps(message) == dumped(message)
    assert serde.dumps([message, {"langgraph_node": "model"}]) == dumped(
        [message, {"langgraph_node": "model"}]
    )


def test_a_message_class_with_a_serializer_of_its_own_goes_through_model_dump() -> None:
    from pydantic import field_serializer

    class Shouting(AIMessage):  # type: ignore[misc]
        @field_serializer("content")
        def loud(self, content: Any) -> Any:
            return content.upper() if isinstance(content, str) else content

    assert serde.loads(serde.dumps(Shouting(content="hi")))["content"] == "HI"
