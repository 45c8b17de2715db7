"""HTTP side of the scripted model: a small ASGI app, served by uvicorn in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from types import TracebackType
from typing import Any, Literal, Self

import orjson
import uvicorn

from agentctl.testing import protocol
from agentctl.testing.script import Reply, ScriptError, decide, unknown_tools

__all__ = ["DEFAULT_MODEL", "ScriptedModelApp", "ScriptedModelServer"]

logger = logging.getLogger("agentctl.testing")

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]

DEFAULT_MODEL = "scripted-model"
API_KEY = "scripted"
_COMPLETIONS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS = frozenset({"/v1/models", "/models"})
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
]
_JSON_TYPE = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")
_NO_RETRY = [(b"x-should-retry", b"false")]
_START_TIMEOUT = 10.0


class ScriptedModelApp:
    """ASGI app answering OpenAI Chat Completions requests from the script in their messages."""

    def __init__(self, model: str = DEFAULT_MODEL, *, keep_alive: bool = True) -> None:
        self.model = model
        self.keep_alive = keep_alive
        self.requests = 0
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
        if path in _COMPLETIONS:
            if method == "POST":
                await self._completions(receive, send)
            else:
                await _error(send, 405, f"Method {method} not allowed", "method_not_allowed")
        elif method != "GET" and (path in _MODELS or path.startswith("/v1/models/")):
            await _error(send, 405, f"Method {method} not allowed", "method_not_allowed")
        elif path in _MODELS:
            await _json(send, 200, protocol.models_body(self.model))
        elif path == f"/v1/models/{self.model}":
            await _json(send, 200, protocol.model_object(self.model))
        else:
            await _error(send, 404, f"Unknown route: {method} {scope['path']}", "unknown_url")

    async def _completions(self, receive: Receive, send: Send) -> None:
        body = await _read_body(receive)
        if body is None:
            return
        self.requests += 1
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            await _error(send, 400, f"Could not parse the JSON body: {exc}", "invalid_json")
            return
        messages = request.get("messages") if isinstance(request, dict) else None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            await _error(send, 400, "'messages' must be a list of message objects", "invalid_value")
            return
        tools = request.get("tools") or []
        if not isinstance(tools, list):
            await _error(send, 400, "'tools' must be a list", "invalid_value")
            return
        try:
            reply = decide(messages)
        except ScriptError as exc:
            await _error(send, 400, str(exc), "invalid_script")
            return
        if reply.tool_calls and logger.isEnabledFor(logging.DEBUG):
            for name in unknown_tools(reply, tools):
                logger.debug("scripted @call of tool %r, which the request does not offer", name)
        if reply.sleep and await self._pause(reply.sleep, receive) == "disconnected":
            return
        if (error := reply.error) is not None:
            await _error(send, error.status, error.message, "scripted_failure", _NO_RETRY)
            return
        model = request.get("model")
        model = model if isinstance(model, str) and model else self.model
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        usage = protocol.usage(messages, tools, reply)
        if request.get("stream") is not True:
            completion = protocol.completion_body(
                reply, completion_id=completion_id, model=model, created=created, usage=usage
            )
            await _json(send, 200, completion)
            return
        options = request.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        events = protocol.stream_events(
            reply,
            completion_id=completion_id,
            model=model,
            created=created,
            usage=usage if include_usage else None,
        )
        await self._stream(events, reply, receive, send)

    async def _stream(
        self, events: list[bytes], reply: Reply, receive: Receive, send: Send
    ) -> None:
        if not reply.slow:
            await _send(send, 200, b"".join(events), _SSE_HEADERS)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
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
    send: Send, status: int, message: str, code: str | None, headers: Headers = ()
) -> None:
    await _json(send, status, protocol.error_body(status, message, code), headers)


class ScriptedModelServer:
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
        """Number of chat completion requests received."""
        return self.app.requests

    @property
    def env(self) -> dict[str, str]:
        """Environment variables pointing the openai SDK and langchain-openai at this server."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": API_KEY}

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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

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
