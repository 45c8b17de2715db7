"""The script language of the scripted model, as pure functions.

A script is a set of directive lines in the last ``user`` message. Each line is one step; the step
played is the number of ``assistant`` messages after that user message. Grammar of a line::

    line     := modifier* action
    modifier := "@sleep" SECONDS | "@slow" SECONDS
    action   := "@say" (TEXT | JSON_STRING) | "@fail" STATUS [MESSAGE] | call (" && " call)*
    call     := "@call" NAME [JSON_OBJECT]

Lines that do not start with a directive are ignored. ``@say`` followed by a JSON string
(``@say "# Title\\n\\n**bold**"``) says that string, line breaks included.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "DONE_TEXT",
    "PLAIN_PREFIX",
    "Call",
    "CallSpec",
    "Fail",
    "Reply",
    "Say",
    "ScriptError",
    "Step",
    "ToolCall",
    "decide",
    "message_text",
    "parse_script",
    "unknown_tools",
]

DONE_TEXT = "done"
"""Reply once every step of the script has been played."""
PLAIN_PREFIX = "scripted reply to: "
"""Prefix of the reply to a user message without directives."""
PLAIN_LIMIT = 200

_KEYWORD = re.compile(r"@(call|say|sleep|slow|fail)(?:\s+|$)")
_TOKEN = re.compile(r"(\S+)(?:\s+|$)")
_NAME = re.compile(r"([^\s{]+)\s*")
_PLACEHOLDER = re.compile(r"\{(last_tool_result|system)\}")
_DECODER = json.JSONDecoder()


class ScriptError(ValueError):
    """A directive line is malformed."""


def _say_text(rest: str) -> str:
    """``@say``'s text: a whole JSON string decoded (so a line can say several), else as is."""
    if rest.startswith('"'):
        try:
            text, end = _DECODER.raw_decode(rest)
        except json.JSONDecodeError:
            return rest
        if isinstance(text, str) and not rest[end:].strip():
            return text
    return rest


@dataclass(frozen=True, slots=True)
class CallSpec:
    """One tool call of a ``@call`` step; ``arguments`` is compact JSON object text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Say:
    """``@say TEXT``: a final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """One or more ``@call`` joined by ``&&``: an assistant message with tool calls."""

    calls: tuple[CallSpec, ...]


@dataclass(frozen=True, slots=True)
class Fail:
    """``@fail STATUS MESSAGE``: an HTTP error."""

    status: int
    message: str


Action = Say | Call | Fail


@dataclass(frozen=True, slots=True)
class Step:
    """One directive line: an action and its delays in seconds."""

    action: Action
    sleep: float = 0.0
    slow: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call of a reply, with its deterministic id."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """What the model answers: text, tool calls, or an error, plus delays."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    error: Fail | None = None
    sleep: float = 0.0
    slow: float = 0.0

    @property
    def finish_reason(self) -> str:
        """OpenAI ``finish_reason`` of this reply."""
        return "tool_calls" if self.tool_calls else "stop"


def message_text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of ``text`` parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") == "text":
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    return ""


@lru_cache(maxsize=1024)
def parse_script(text: str) -> tuple[Step, ...]:
    """Parse the directive lines of ``text`` into steps; raise `ScriptError` if one is bad."""
    steps: list[Step] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not _KEYWORD.match(line):
            continue
        try:
            steps.append(_parse_line(line))
        except ScriptError as exc:
            raise ScriptError(f"script line {number} ({line!r}): {exc}") from None
    return tuple(steps)


def _parse_line(line: str) -> Step:
    sleep = slow = 0.0
    rest = line
    while True:
        match = _KEYWORD.match(rest)
        if match is None:
            raise ScriptError(f"expected a directive at {rest!r}" if rest else "missing action")
        keyword, rest = match.group(1), rest[match.end() :]
        if keyword == "sleep":
            seconds, rest = _seconds(keyword, rest)
            sleep += seconds
        elif keyword == "slow":
            slow, rest = _seconds(keyword, rest)
        elif keyword == "say":
            return Step(Say(_say_text(rest)), sleep, slow)
        elif keyword == "fail":
            return Step(_parse_fail(rest), sleep, slow)
        else:
            return Step(Call(_parse_calls(rest)), sleep, slow)


def _seconds(keyword: str, rest: str) -> tuple[float, str]:
    match = _TOKEN.match(rest)
    try:
        value = float(match.group(1)) if match else math.nan
    except ValueError:
        value = math.nan
    if match is None or not (math.isfinite(value) and value >= 0):
        raise ScriptError(f"@{keyword} needs a number of seconds >= 0")
    return value, rest[match.end() :]


def _parse_fail(rest: str) -> Fail:
    match = _TOKEN.match(rest)
    if match is None or not re.fullmatch(r"[45][0-9][0-9]", match.group(1)):
        raise ScriptError("@fail needs an HTTP status between 400 and 599")
    return Fail(int(match.group(1)), rest[match.end() :] or "scripted failure")


def _parse_calls(rest: str) -> tuple[CallSpec, ...]:
    calls: list[CallSpec] = []
    while True:
        match = _NAME.match(rest)
        if match is None:
            raise ScriptError("@call needs a tool name")
        name, rest = match.group(1), rest[match.end() :]
        args: Any = {}
        if rest.startswith("{"):
            try:
                args, end = _DECODER.raw_decode(rest)
            except json.JSONDecodeError as exc:
                raise ScriptError(f"invalid JSON arguments for {name}: {exc.msg}") from None
            rest = rest[end:].lstrip()
        calls.append(CallSpec(name, json.dumps(args, ensure_ascii=False, separators=(",", ":"))))
        if not rest:
            return tuple(calls)
        if not rest.startswith("&&"):
            raise ScriptError(f"arguments of {name} must be one JSON object, got {rest!r}")
        rest = rest[2:].lstrip()
        match = _KEYWORD.match(rest)
        if match is None or match.group(1) != "call":
            raise ScriptError("expected @call after &&")
        rest = rest[match.end() :]


def decide(messages: Sequence[Mapping[str, Any]]) -> Reply:
    """Decide the next assistant reply from the conversation ``messages`` (OpenAI format)."""
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None
    )
    if last_user is None:
        return Reply(content=PLAIN_PREFIX)
    text = message_text(messages[last_user].get("content"))
    steps = parse_script(text)
    if not steps:
        return Reply(content=PLAIN_PREFIX + text.strip()[:PLAIN_LIMIT])
    number = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")
    if number >= len(steps):
        return Reply(content=DONE_TEXT)
    step = steps[number]
    action = step.action
    if isinstance(action, Say):
        return Reply(content=_expand(action.text, messages), sleep=step.sleep, slow=step.slow)
    if isinstance(action, Fail):
        return Reply(error=action, sleep=step.sleep, slow=step.slow)
    calls = tuple(
        ToolCall(_call_id(last_user, number, index, call), call.name, call.arguments)
        for index, call in enumerate(action.calls)
    )
    return Reply(tool_calls=calls, sleep=step.sleep, slow=step.slow)


def unknown_tools(reply: Reply, tools: Iterable[Any]) -> list[str]:
    """Names of the reply's tool calls that are not among the request's ``tools``."""
    known: set[Any] = set()
    for tool in tools:
        if isinstance(
            tool, Mapping
        ):  # OpenAI and Ollama: {"function": {"name"}}; Anthropic: {"name"}
            function = tool.get("function")
            known.add(function.get("name") if isinstance(function, Mapping) else tool.get("name"))
    return [call.name for call in reply.tool_calls if call.name not in known]


def _call_id(turn: int, step: int, index: int, call: CallSpec) -> str:
    seed = f"{turn}:{step}:{index}:{call.name}:{call.arguments}".encode()
    return f"call_{step}_{hashlib.sha1(seed, usedforsecurity=False).hexdigest()[:12]}"


def _expand(text: str, messages: Sequence[Mapping[str, Any]]) -> str:
    if "{" not in text:
        return text

    def value(match: re.Match[str]) -> str:
        if match.group(1) == "system":
            return "\n\n".join(
                message_text(m.get("content"))
                for m in messages
                if m.get("role") in ("system", "developer")
            )
        for message in reversed(messages):
            if message.get("role") == "tool":
                return message_text(message.get("content"))
        return ""

    return _PLACEHOLDER.sub(value, text)
