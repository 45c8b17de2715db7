"""A model call's tokens and finish reason, read from langchain's messages as each provider's
package fills them."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AIMessageChunk

from agentctl.metering.ledger import Tokens
from agentctl.metering.usage import finish_reason_of, tokens_of


def test_tokens_from_usage_metadata() -> None:
    message = AIMessage(
        "hi",
        usage_metadata={
            "input_tokens": 120,
            "output_tokens": 7,
            "total_tokens": 127,
            "input_token_details": {"cache_read": 100, "cache_creation": 0},
        },
    )
    assert tokens_of(message) == Tokens(input=120, output=7, cached=100, calls=1)
    plain = AIMessageChunk("", usage_metadata={"input_tokens": 3, "output_tokens": 1,
                                               "total_tokens": 4})  # fmt: skip
    assert tokens_of(plain) == Tokens(input=3, output=1, cached=0, calls=1)


def test_no_usage_is_none() -> None:
    assert tokens_of(AIMessage("hi")) is None
    assert tokens_of(None) is None


def test_finish_reason_under_each_providers_key() -> None:
    assert finish_reason_of(AIMessage("", response_metadata={"finish_reason": "tool_calls"})) == (
        "tool_calls"
    )
    assert finish_reason_of(AIMessage("", response_metadata={"stop_reason": "end_turn"})) == (
        "end_turn"
    )
    assert finish_reason_of(AIMessage("", response_metadata={"done_reason": "stop"})) == "stop"
    assert finish_reason_of(AIMessage("")) is None
    assert finish_reason_of(None) is None
