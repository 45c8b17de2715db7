"""A WebSocket on `/threads/{id}/stream/events`: commands in, answers and events out.

Every frame a client sends is a command. `subscription.subscribe` (`{channels, namespaces?,
depth?, since?}`) adds a filter; the socket then carries each event of the thread that any
of its filters accepts, from the start of the thread's log (after `since`, when given),
then live. Other commands (`run.start`, `input.respond`, …) are answered as over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from agentctl import serde
from agentctl.server.access import Caller
from agentctl.server.app import Server
from agentctl.server.errors import ApiError
from agentctl.server.protocol.commands import Commands, error, malformed, success
from agentctl.server.protocol.filters import EventFilter, FilterError, parse_filter, parse_since
from agentctl.server.protocol.stream import thread_events

log = logging.getLogger("agentctl.server")
_subscription_ids = itertools.count(1)


class SocketSession:
    def __init__(self, server: Server, caller: Caller, thread_id: str, socket: WebSocket) -> None:
        self.server = server
        self.thread_id = thread_id
        self.socket = socket
        self.commands = Commands(server, caller, thread_id)
        self.filters: dict[str, EventFilter] = {}
        self.pump: asyncio.Task[None] | None = None
        self._sending = asyncio.Lock()

    async def serve(self) -> None:
        try:
            await self.commands.visible_thread(missing_ok=True)
        except ApiError as exc:
            await self.socket.close(code=4000 + exc.status, reason=exc.detail[:120])
            return
        try:
            while True:
                await self._answer(await self.socket.receive_text())
        except WebSocketDisconnect:
            pass
        finally:
            if self.pump is not None:
                self.pump.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.pump

    async def _send(self, message: dict[str, Any]) -> None:
        async with self._sending:
            await self.socket.send_text(serde.dumps(message).decode())

    async def _answer(self, text: str) -> None:
        try:
            message = serde.loads(text)
        except ValueError:
            await self._send(error(None, "invalid_argument", "a command must be JSON"))
            return
        problem = malformed(message)
        if problem is not None:
            command_id = message.get("id") if isinstance(message, dict) else None
            await self._send(error(command_id, "invalid_argument", problem))
            return
        method, params = message["method"], message.get("params") or {}
        if method == "subscription.subscribe":
            answer = await self._subscribe(message["id"], params)
        elif method == "subscription.unsubscribe":
            subscription_id = params.get("subscription_id")
            if self.filters.pop(str(subscription_id), None) is None:
                answer = error(
                    message["id"],
                    "no_such_subscription",
                    f"no subscription {subscription_id!r} on this socket",
                )
            else:
                answer = success(message["id"], {})
        else:
            answer = await self.commands.handle(message)
        await self._send(answer)

    async def _subscribe(self, command_id: int, params: dict[str, Any]) -> dict[str, Any]:
        try:
            event_filter, since = parse_filter(params), parse_since(params)
            await self.commands.visible_thread(missing_ok=False)
        except FilterError as exc:
            return error(command_id, "invalid_argument", str(exc))
        except ApiError as exc:
            return error(command_id, "invalid_argument", exc.detail)
        subscription_id = str(next(_subscription_ids))
        self.filters[subscription_id] = event_filter
        if self.pump is None:
            self.pump = asyncio.create_task(self._forward(since))
        return success(command_id, {"subscription_id": subscription_id})

    def _wanted(self, event: dict[str, Any]) -> bool:
        return any(f.matches(event) for f in self.filters.values())

    async def _forward(self, since: int | None) -> None:
        try:
            async for event in thread_events(self.server, self.thread_id, self._wanted, since):
                if event is not None:
                    await self._send(event)
            # The server stops: the client reconnects (to another replica) and resumes.
            await self.socket.close(code=1012, reason="the server is restarting")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the log could not be read: say so, then hang up
            log.warning("thread stream %s failed: %s", self.thread_id, exc)
            with contextlib.suppress(Exception):
                await self._send(
                    error(None, "unknown_error", "the thread's events could not be read")
                )
                await self.socket.close(code=1011, reason="thread stream failed")
