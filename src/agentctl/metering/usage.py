"""What one model call spent, from the provider's own usage data as langchain carries it.

langchain's chat models put the provider's counts on the response's `AIMessage`
(`usage_metadata`, the same keys on every provider): `input_tokens` (cache reads included —
Anthropic's own `input_tokens` excludes them, and langchain-anthropic adds them back),
`output_tokens`, and `input_token_details.cache_read`. The reason the model stopped is in
`response_metadata`, under the provider's own key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentctl.metering.ledger import Tokens

# Where each provider says why it stopped: OpenAI (and its compatible servers), Anthropic,
# Ollama; Google and Bedrock's Converse use the last two.
FINISH_KEYS = ("finish_reason", "stop_reason", "done_reason", "stopReason")


def tokens_of(message: Any) -> Tokens | None:
    """The tokens of one model call's response (an `AIMessage` or chunk); None when the
    provider reported none."""
    usage = getattr(message, "usage_metadata", None)
    if not isinstance(usage, Mapping):
        return None
    details = usage.get("input_token_details")
    cached = details.get("cache_read") if isinstance(details, Mapping) else None
    return Tokens(
        input=_count(usage.get("input_tokens")),
        output=_count(usage.get("output_tokens")),
        cached=_count(cached),
        calls=1,
    )


def finish_reason_of(message: Any) -> str | None:
    """Why the model stopped (`stop`, `end_turn`, `tool_calls`…), as its provider said it."""
    metadata = getattr(message, "response_metadata", None)
    if not isinstance(metadata, Mapping):
        return None
    for key in FINISH_KEYS:
        reason = metadata.get(key)
        if isinstance(reason, str) and reason:
            return reason
    return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
