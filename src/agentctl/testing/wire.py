"""What the wire formats of the scripted model share: the parsed request, token estimates and
how replies are cut into streamed pieces.

Each wire (`openai_wire`, `anthropic_wire`, `ollama_wire`) turns its request body into a `Chat`
whose messages are in the OpenAI shape that `script.decide` reads (``role`` of ``system``,
``user``, ``assistant`` or ``tool``; ``content``; ``tool_calls``), and encodes the `Reply`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from agentctl.testing.script import Reply, message_text

__all__ = [
    "Chat",
    "Usage",
    "Wire",
    "WireError",
    "estimate_tokens",
    "expect_object",
    "model_name",
    "object_list",
    "optional_list",
    "split",
    "token_counts",
    "usage_of",
    "words",
]

_PIECE = re.compile(r"\S+\s*|\s+")


class WireError(ValueError):
    """A request body that does not follow its wire format; the message names the field."""


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat request, whatever its wire: messages in the OpenAI shape, tools as sent."""

    messages: list[dict[str, Any]]
    tools: list[Any] = field(default_factory=list)
    model: str | None = None
    stream: bool = False
    include_usage: bool = True


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens an answer reports, counted as langchain counts them (``usage_metadata``):
    ``input`` includes the ``cached`` ones, whatever the wire says (Anthropic's own
    ``input_tokens`` leaves out the tokens read from the cache)."""

    input: int
    output: int
    cached: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output


class Wire(Protocol):
    """One provider's wire format: how a request is read and a reply or an error written."""

    stream_type: bytes
    """``content-type`` of a streamed answer."""

    def usage(self, reply: Reply, chat: Chat) -> Usage | None:
        """The tokens the answer to `chat` reports; None when it reports none (a stream
        that was not asked for its usage)."""
        ...

    def parse(self, request: Any) -> Chat:
        """Read a request body; raise `WireError` naming the bad field."""
        ...

    def body(self, reply: Reply, chat: Chat, model: str) -> Any:
        """The non-streaming answer."""
        ...

    def stream(self, reply: Reply, chat: Chat, model: str) -> list[bytes]:
        """The streamed answer, one element per chunk (sent apart when ``@slow``)."""
        ...

    def error(self, status: int, message: str, code: str) -> Any:
        """An error body."""
        ...


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: about four characters per token."""
    return (len(text) + 3) // 4


def token_counts(chat: Chat, reply: Reply) -> tuple[int, int]:
    """Estimated ``(prompt, completion)`` tokens of a request and its reply."""
    prompt = estimate_tokens(orjson.dumps(chat.tools).decode()) if chat.tools else 0
    for message in chat.messages:
        prompt += 4 + estimate_tokens(message_text(message.get("content")))
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                prompt += estimate_tokens(
                    f"{function.get('name', '')}{function.get('arguments', '')}"
                )
    completion = estimate_tokens(reply.content) + sum(
        1 + estimate_tokens(call.name + call.arguments) for call in reply.tool_calls
    )
    return prompt, max(completion, 1)


def cached_tokens(prompt: int) -> int:
    """Deterministic count of a prompt's tokens read from the provider's cache: a quarter."""
    return prompt // 4


def usage_of(chat: Chat, reply: Reply, *, cache: bool = True) -> Usage:
    """The usage of a request and its reply: estimated tokens, a quarter of the prompt read
    from the cache when the wire has a cache (`cache`)."""
    prompt, completion = token_counts(chat, reply)
    return Usage(prompt, completion, cached_tokens(prompt) if cache else 0)


def words(text: str) -> list[str]:
    """``text`` in word-sized pieces (each word with the spaces after it)."""
    return _PIECE.findall(text)


def split(text: str, pieces: int) -> list[str]:
    """``text`` cut into at most ``pieces`` parts of about equal size."""
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def object_list(value: Any, name: str) -> list[dict[str, Any]]:
    """``value`` when it is a list of JSON objects, else `WireError` naming ``name``."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise WireError(f"'{name}' must be a list of objects")
    return value


def optional_list(request: Mapping[str, Any], name: str) -> list[Any]:
    """The list at ``request[name]`` (empty when absent or null), else `WireError`."""
    value = request.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(f"'{name}' must be a list")
    return value


def model_name(request: Mapping[str, Any]) -> str | None:
    """The request's ``model`` when it is a non-empty string."""
    model = request.get("model")
    return model if isinstance(model, str) and model else None


def expect_object(request: Any) -> Mapping[str, Any]:
    """The request body when it is a JSON object, else `WireError`."""
    if not isinstance(request, dict):
        raise WireError("the request body must be a JSON object")
    return request
