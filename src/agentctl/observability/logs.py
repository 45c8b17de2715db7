"""Logging of the server process: one formatter for agentctl, its libraries and uvicorn.

`json` writes one object per line on stderr (`ts`, `level`, `logger`, `message`, `exc_info`
and any context fields); `text` writes readable lines. Fields bound with `bind_run` (or
`bind`) are added to every record logged inside, in the task and the tasks it starts.

Never log secrets: handlers must not log request headers, tokens or `.env` values.
`RedactSecrets` is only a safety net: it masks the values of `Authorization`, `x-api-key`
and similar keys, `Bearer <token>`, and the `code` and `state` of an OAuth callback URL, in
every message and traceback.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, TextIO

_context: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "agentctl_log_context", default=MappingProxyType({})
)

# Attributes every LogRecord has: anything else on a record is a field of its own.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's message with terminal colours
}
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}  # fmt: skip
_CHATTY = ("httpx", "httpcore")
_UVICORN = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")

_SECRET_KEY = re.compile(
    r"""(?ix)
    ( (?:proxy-)?authorization | x-api-key | api[-_]?key | (?:access|refresh|id)[-_]token
      | client[-_]secret | password | (?<=[?&])(?:key|token|sig|signature|code|state) )
    ( ["']? \s* [:=] \s* (?:b?["'])?   # `key: v`, `key=v`, `"key": "v"`
    | ["'] \s* , \s* b? ["'] )       # `(b'key', b'v')`: a header tuple
    (?: (?:bearer|basic) \s+ )? [^\s"'&,;})\]]+
    """
)
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*")
MASK = "***"


def redact(text: str) -> str:
    """`text` with the values of credential keys and bearer tokens masked."""
    text = _SECRET_KEY.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    return _BEARER.sub(f"Bearer {MASK}", text)


@contextmanager
def bind(**fields: Any) -> Iterator[None]:
    """Add `fields` to every record logged inside (and in tasks started inside)."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def bind_run(
    run_id: str, thread_id: str, assistant_id: str | None = None, **fields: Any
) -> AbstractContextManager[None]:
    """Add the run's ids to every record logged while it executes::

    with bind_run(run.run_id, run.thread_id, run.assistant_id, attempt=run.attempt):
        await execute(run)
    """
    ids: dict[str, Any] = {"run_id": run_id, "thread_id": thread_id}
    if assistant_id is not None:
        ids["assistant_id"] = assistant_id
    return bind(**ids, **fields)


def context() -> Mapping[str, Any]:
    """The fields bound where this is called."""
    return _context.get()


class ContextFields(logging.Filter):
    """Puts the bound fields on each record (fields passed in `extra=` win)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            record.__dict__.setdefault(key, value)
        return True


class RedactSecrets(logging.Filter):
    """Masks credentials in the message, the traceback and string fields of each record."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: dropped, never echoed
            message = f"{record.msg} (log arguments did not fit the message)"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        for key, value in fields_of(record).items():
            if isinstance(value, str):
                setattr(record, key, redact(value))
        return True


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The record's own fields: bound context and `extra=` values."""
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = record.stack_info
        for key, value in fields_of(record).items():
            line.setdefault(key, value)
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`<ts> <LEVEL> <logger>: <message> key=value …`, then the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields = "".join(f" {k}={v}" for k, v in fields_of(record).items())
        text = f"{_timestamp(record)} {record.levelname:<7} {record.name}: "
        text += record.getMessage() + fields
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            text += "\n" + record.exc_text
        if record.stack_info:
            text += "\n" + record.stack_info
        return text


class _AgentctlHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler `configure_logging` installs (and replaces when called again)."""


def configure_logging(format: str, level: str, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record of the process (agentctl, libraries, uvicorn's error and access
    logs) to `stream` (default: stderr) in `format` (`json` or `text`) at `level` and up
    (httpx's request lines only at `debug`). Calling it again replaces the handler; remove
    the handler it returns from the root logger to undo it."""
    if format not in ("json", "text"):
        raise ValueError(f"log format must be json or text, got {format!r}")
    handler = _AgentctlHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    handler.addFilter(ContextFields())
    handler.addFilter(RedactSecrets())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _AgentctlHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_LEVELS.get(level.lower(), logging.INFO))
    for name in _CHATTY:  # a line per model call at `info`; shown at `debug`
        logging.getLogger(name).setLevel(
            logging.NOTSET if root.level <= logging.DEBUG else logging.WARNING
        )
    for name in _UVICORN:  # uvicorn's own handlers (if any) would bypass the formatter
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    return handler
