"""HTTP side of the scripted model: a small ASGI app, served by uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import orjson
import uvicorn

from agentctl.testing import anthropic_wire, ollama_wire, openai_wire
from agentctl.testing.script import Reply, ScriptError, decide, message_text, unknown_tools
from agentctl.testing.serving import Startable
from agentctl.testing.wire import Chat, Usage, Wire, WireError

__all__ = ["DEFAULT_MODEL", "PROVIDERS", "Reported", "ScriptedModelApp", "ScriptedModelServer"]

logger = logging.getLogger("agentctl.testing")

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]

DEFAULT_MODEL = "scripted-model"
API_KEY = "scripted"
PROVIDERS = ("openai", "anthropic", "ollama")
"""The providers whose wire the server speaks (see `ScriptedModelServer.env_for`)."""
_OPENAI: Wire = openai_wire.OpenAIWire()
_ANTHROPIC: Wire = anthropic_wire.AnthropicWire()
_OLLAMA: Wire = ollama_wire.OllamaWire()
_WIRES = {
    "/v1/chat/completions": _OPENAI,
    "/chat/completions": _OPENAI,
    "/v1/messages": _ANTHROPIC,
    "/api/chat": _OLLAMA,
}
_COUNT_TOKENS = "/v1/messages/count_tokens"
_MODELS = frozenset({"/v1/models", "/models"})
_TAGS = "/api/tags"
_LISTS = _MODELS | {_TAGS}
_NO_CACHE = (b"cache-control", b"no-cache")
_JSON_TYPE = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")
_NO_RETRY = [(b"x-should-retry", b"false")]
_START_TIMEOUT = 10.0
_WIRE_NAMES = {id(_OPENAI): "openai", id(_ANTHROPIC): "anthropic", id(_OLLAMA): "ollama"}


@dataclass(frozen=True, slots=True)
class Reported:
    """The usage one answer reported, as langchain counts it (`Usage`), with the wire it
    was on, whether it streamed, and the first line of the request's last user message
    (a test's marker of the run that made it)."""

    wire: str
    stream: bool
    usage: Usage
    marker: str = ""


class ScriptedModelApp:
    """ASGI app answering chat requests from the script in their messages, on the wires of
    OpenAI (Chat Completions), Anthropic (Messages) and Ollama (``/api/chat``)."""

    def __init__(self, model: str = DEFAULT_MODEL, *, keep_alive: bool = True) -> None:
        self.model = model
        self.keep_alive = keep_alive
        self.requests = 0
        self.keys: list[str] = []  # the credential of each chat request, "" when none
        self.reported: list[Reported] = []  # the usage of each answer that reported one
        # Called with the client's (host, port) and each chat request, before it is
        # answered, on the server's thread: e.g. to tell which process made each call.
        self.observer: Callable[[tuple[str, int] | None, Chat], None] | None = None
        self._stopping: asyncio.Event | None = None

    def reset(self) -> None:
        """Clear the stop signal; call from the serving event loop before serving."""
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Wake up delayed answers (``@sleep``/``@slow``); call from the serving event loop."""
        self._stopping_event().set()

    def _stopping_event(self) -> asyncio.Event:
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not self.keep_alive:
            send = _closing(send)
        path: str = scope["path"].rstrip("/")
        method: str = scope["method"]
        wire = _WIRES.get(path)
        if wire is not None or path == _COUNT_TOKENS:
            wire = wire or _ANTHROPIC
            if method != "POST":
                await _error(send, wire, 405, f"Method {method} not allowed", "method_not_allowed")
            elif path == _COUNT_TOKENS:
                await self._count_tokens(receive, send)
            else:
                self.keys.append(_credential(scope))
                await self._answer(wire, receive, send, scope.get("client"))
        elif method != "GET" and (path in _LISTS or path.startswith("/v1/models/")):
            await _error(send, _OPENAI, 405, f"Method {method} not allowed", "method_not_allowed")
        elif path in _MODELS:
            await _json(send, 200, openai_wire.models_body(self.model))
        elif path == f"/v1/models/{self.model}":
            await _json(send, 200, openai_wire.model_object(self.model))
        elif path == _TAGS:
            await _json(send, 200, ollama_wire.tags_body(self.model))
        else:
            wire = _OLLAMA if path.startswith("/api/") else _OPENAI
            message = f"Unknown route: {method} {scope['path']}"
            await _error(send, wire, 404, message, "unknown_url")

    async def _read(
        self, wire: Wire, receive: Receive, send: Send, *, counted: bool = True
    ) -> Chat | None:
        """The request as a `Chat`, or None once a 400 answered it (or the client left);
        ``counted`` requests are chat requests, counted in `requests`."""
        body = await _read_body(receive)
        if body is None:
            return None
        self.requests += counted
        try:
            return wire.parse(orjson.loads(body))
        except orjson.JSONDecodeError as exc:
            await _error(send, wire, 400, f"Could not parse the JSON body: {exc}", "invalid_json")
        except WireError as exc:
            await _error(send, wire, 400, str(exc), "invalid_value")
        return None

    async def _count_tokens(self, receive: Receive, send: Send) -> None:
        chat = await self._read(_ANTHROPIC, receive, send, counted=False)
        if chat is not None:
            await _json(send, 200, anthropic_wire.count_tokens_body(chat))

    async def _answer(
        self, wire: Wire, receive: Receive, send: Send, client: tuple[str, int] | None
    ) -> None:
        chat = await self._read(wire, receive, send)
        if chat is None:
            return
        if self.observer is not None:
            self.observer(client, chat)
        try:
            reply = decide(chat.messages)
        except ScriptError as exc:
            await _error(send, wire, 400, str(exc), "invalid_script")
            return
        if reply.tool_calls and logger.isEnabledFor(logging.DEBUG):
            for name in unknown_tools(reply, chat.tools):
                logger.debug("scripted @call of tool %r, which the request does not offer", name)
        if reply.sleep and await self._pause(reply.sleep, receive) == "disconnected":
            return
        if (error := reply.error) is not None:
            await _error(send, wire, error.status, error.message, "scripted_failure", _NO_RETRY)
            return
        model = chat.model or self.model
        usage = wire.usage(reply, chat)
        if usage is not None:
            self.reported.append(Reported(_WIRE_NAMES[id(wire)], chat.stream, usage, _marker(chat)))
        if not chat.stream:
            await _json(send, 200, wire.body(reply, chat, model))
            return
        headers = [(b"content-type", wire.stream_type), _NO_CACHE]
        await self._stream(wire.stream(reply, chat, model), reply, headers, receive, send)

    async def _stream(
        self, events: list[bytes], reply: Reply, headers: Headers, receive: Receive, send: Send
    ) -> None:
        if not reply.slow:
            await _send(send, 200, b"".join(events), headers)
            return
        await send({"type": "http.response.start", "status": 200, "headers": list(headers)})
        delay = reply.slow
        for number, event in enumerate(events):
            if number and delay:
                outcome = await self._pause(delay, receive)
                if outcome == "disconnected":
                    return
                if outcome == "stopping":
                    delay = 0.0
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pause(
        self, seconds: float, receive: Receive
    ) -> Literal["disconnected", "stopping"] | None:
        """Wait ``seconds`` unless the client disconnects or the server stops first."""
        stopping = self._stopping_event()
        if stopping.is_set():
            return "stopping"
        disconnect = asyncio.ensure_future(receive())
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait((disconnect, stop), timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            for task in (disconnect, stop):
                task.cancel()
            await asyncio.wait((disconnect, stop))
        if disconnect.done() and not disconnect.cancelled():
            disconnect.exception()  # retrieve any error: either way the client is gone
            return "disconnected"
        return "stopping" if stopping.is_set() else None


def _marker(chat: Chat) -> str:
    """The first line of the request's last user message."""
    for message in reversed(chat.messages):
        if message.get("role") == "user":
            return message_text(message.get("content")).split("\n", 1)[0]
    return ""


def _credential(scope: Scope) -> str:
    """The key a request carries: OpenAI's `Authorization: Bearer`, Anthropic's `x-api-key`."""
    headers: dict[bytes, bytes] = dict(scope.get("headers") or ())
    bearer = headers.get(b"authorization", b"").decode("latin-1")
    return bearer.removeprefix("Bearer ") or headers.get(b"x-api-key", b"").decode("latin-1")


def _closing(send: Send) -> Send:
    """Wrap ``send`` to answer with ``Connection: close``."""

    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message["headers"], _CLOSE]}
        await send(message)

    return closing_send


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _send(send: Send, status: int, body: bytes, headers: Headers) -> None:
    start_headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: Any, headers: Headers = ()) -> None:
    await _send(send, status, orjson.dumps(payload), [_JSON_TYPE, *headers])


async def _error(
    send: Send, wire: Wire, status: int, message: str, code: str, headers: Headers = ()
) -> None:
    await _json(send, status, wire.error(status, message, code), headers)


class ScriptedModelServer(Startable):
    """A scripted OpenAI-compatible model server running in a background thread.

    Use ``with ScriptedModelServer() as server:`` (or ``async with``), then point
    ``langchain-openai`` at ``server.base_url`` with any API key. ``keep_alive=False`` answers
    with ``Connection: close``, so no pooled client connection outlives a test's event loop.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        model: str = DEFAULT_MODEL,
        keep_alive: bool = True,
    ) -> None:
        self.host = host
        self.app = ScriptedModelApp(model, keep_alive=keep_alive)
        self._requested_port = port
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        """TCP port the server listens on."""
        if self._port is None:
            raise RuntimeError("the scripted model server is not started")
        return self._port

    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def model(self) -> str:
        """Model name listed by ``GET /v1/models`` (any name is accepted in requests)."""
        return self.app.model

    @property
    def requests(self) -> int:
        """Number of chat requests received (on any wire)."""
        return self.app.requests

    @property
    def keys(self) -> list[str]:
        """The API key each chat request carried, in order ("" when it carried none)."""
        return list(self.app.keys)

    @property
    def reported(self) -> list[Reported]:
        """The usage each answer reported, in order (a stream not asked for it is left out)."""
        return list(self.app.reported)

    def usage(self, marker: str | None = None) -> Usage:
        """The tokens reported in all, or to the requests whose last user message begins
        with the line `marker`."""
        picked = [r.usage for r in self.app.reported if marker is None or r.marker == marker]
        return Usage(
            sum(u.input for u in picked),
            sum(u.output for u in picked),
            sum(u.cached for u in picked),
        )

    @property
    def env(self) -> dict[str, str]:
        """Environment variables pointing the openai SDK and langchain-openai at this server."""
        return self.env_for("openai")

    def env_for(self, provider: str) -> dict[str, str]:
        """Environment variables pointing `provider` (``openai``, ``anthropic`` or ``ollama``:
        their SDKs, their langchain packages, ``init_chat_model("PROVIDER:...")``) at this
        server."""
        if provider == "openai":
            return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": API_KEY}
        if provider == "anthropic":
            return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": API_KEY}
        if provider == "ollama":
            return {"OLLAMA_HOST": self.url}
        raise ValueError(f"unknown provider {provider!r}: use one of {', '.join(PROVIDERS)}")

    @property
    def running(self) -> bool:
        """Whether the server thread is running."""
        return self._thread is not None

    def start(self) -> Self:
        """Start serving; return once the port answers requests."""
        self._launch()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._ready(deadline):
            time.sleep(0.001)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread to end; safe to call twice."""
        thread = self._thread
        if thread is None:
            return
        self._request_stop()
        thread.join()
        self._cleanup()

    async def astart(self) -> Self:
        """Like `start`, without blocking the event loop."""
        self._launch()
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._ready(deadline):
            await asyncio.sleep(0.001)
        return self

    async def astop(self) -> None:
        """Like `stop`, without blocking the event loop."""
        thread = self._thread
        if thread is None:
            return
        self._request_stop()
        while thread.is_alive():
            await asyncio.sleep(0.005)
        thread.join()
        self._cleanup()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.astop()

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"<ScriptedModelServer {where}>"

    def _launch(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the scripted model server is already running")
        family, kind, proto, _, address = socket.getaddrinfo(
            self.host, self._requested_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        # A non-zero proto lets asyncio set TCP_NODELAY on accepted connections (latency).
        sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(2048)
        except BaseException:
            sock.close()
            raise
        config = uvicorn.Config(
            self.app,
            http="h11",
            ws="none",
            loop="asyncio",
            interface="asgi3",
            lifespan="off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=5,
        )
        self._socket = sock
        self._port = sock.getsockname()[1]
        self._server = uvicorn.Server(config)
        self._error = None
        self._thread = threading.Thread(
            target=self._run, name=f"scripted-model-{self._port}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by start()
            self._error = exc

    async def _serve(self) -> None:
        assert self._server is not None
        assert self._socket is not None
        self._loop = asyncio.get_running_loop()
        self.app.reset()
        await self._server.serve(sockets=[self._socket])

    def _ready(self, deadline: float) -> bool:
        assert self._server is not None
        assert self._thread is not None
        if self._server.started:
            return True
        if not self._thread.is_alive() or time.monotonic() > deadline:
            error = self._error
            self.stop()
            raise RuntimeError("the scripted model server failed to start") from error
        return False

    def _request_stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self.app.stop)

    def _cleanup(self) -> None:
        if self._socket is not None:
            self._socket.close()
        self._thread = self._server = self._socket = self._loop = None
