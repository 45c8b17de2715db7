"""A WebSocket on `/threads/{id}/stream/events`: commands in, answers and events out.

Every frame a client sends is a command. `subscription.subscribe` (`{channels, namespaces?,
depth?, since?}`) adds a filter; the socket then carries each event of the thread that any
of its filters accepts, then live. Every subscription gets the thread's history (after its
`since`, when given), whenever it is made: a client that subscribes again after the run has
gone on — a projection opened late, or every subscription made again on a new socket after
a reconnect — gets what it has not seen, in order, as the reference server replays its
buffer to each new subscription. Other commands (`run.start`, `input.respond`, …) are
answered as over HTTP.

One task (the pump) reads the thread's events in order and sends each one that some
subscription wants and has not been given yet (each keeps a cursor: the `seq` it has been
brought up to). A subscription whose cursor is behind the pump restarts the pump from the
thread's first event, so its history reaches it in order, and no other subscription gets an
event twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from dataclasses import dataclass
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agentctl import serde
from agentctl.errors import RequestError
from agentctl.server.access import Caller
from agentctl.server.context import Server
from agentctl.server.protocol.commands import Commands, error, malformed, success
from agentctl.server.protocol.filters import EventFilter, parse_filter, parse_since
from agentctl.server.protocol.stream import agent_deleted, thread_events

log = logging.getLogger("agentctl.server")
_subscription_ids = itertools.count(1)
# Each subscription that is behind replays the thread's log: a socket holds a few, not many.
MAX_SUBSCRIPTIONS = 32


@dataclass
class _Subscription:
    filter: EventFilter
    cursor: int  # the `seq` this subscription has been brought up to


class SocketSession:
    def __init__(self, server: Server, caller: Caller, thread_id: str, socket: WebSocket) -> None:
        self.server = server
        self.thread_id = thread_id
        self.socket = socket
        self.commands = Commands(server, caller, thread_id)
        self.subscriptions: dict[str, _Subscription] = {}
        self.pump: asyncio.Task[None] | None = None
        self._position = 0  # the `seq` of the last event the pump has read
        self._sending = asyncio.Lock()

    async def serve(self) -> None:
        try:
            await self.commands.refuse_foreign()
        except RequestError as exc:
            await self.socket.close(code=4000 + exc.status, reason=str(exc)[:120])
            return
        try:
            while True:
                message = await self.socket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:  # a binary frame: commands are JSON text
                    text = (message.get("bytes") or b"").decode("utf-8", "replace")
                await self._answer(text)
        except WebSocketDisconnect:
            pass
        except RuntimeError:
            if self.socket.application_state != WebSocketState.DISCONNECTED:
                raise
            # the pump closed the socket (the server stops) while an answer was going out
        finally:
            await self._stop_pump()

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
            if self.subscriptions.pop(str(subscription_id), None) is None:
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
            await self.commands.thread()
        except RequestError as exc:  # a filter to fix, or a thread not found
            return error(command_id, "invalid_argument", str(exc))
        if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
            return error(
                command_id,
                "invalid_argument",
                f"a socket holds at most {MAX_SUBSCRIPTIONS} subscriptions: unsubscribe one",
            )
        subscription_id = str(next(_subscription_ids))
        self.subscriptions[subscription_id] = _Subscription(event_filter, since or 0)
        if self.pump is None or (since or 0) < self._position:
            await self._stop_pump()  # the new subscription's history is behind the pump
            self._position = 0
            self.pump = asyncio.create_task(self._forward())
        return success(command_id, {"subscription_id": subscription_id})

    def _wanted(self, event: dict[str, Any]) -> bool:
        """Whether some subscription wants `event` and has not been given it yet; every
        subscription is brought up to it either way."""
        seq = event["seq"]
        wanted = False
        for subscription in self.subscriptions.values():
            if seq > subscription.cursor:
                wanted = wanted or subscription.filter.matches(event)
                subscription.cursor = seq
        self._position = seq
        return wanted

    async def _stop_pump(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.pump
            self.pump = None

    async def _forward(self) -> None:
        try:
            async for event in thread_events(
                self.server, self.commands.caller, self.thread_id, self._wanted, None
            ):
                if event is not None:
                    # A pump stopped (for a new subscription) mid-send still sends the whole
                    # frame: the subscriptions' cursors already count the event as given.
                    await asyncio.shield(self._send(event))
            if self.server.deleted.is_set():  # a refusal: the client does not reconnect
                await self._send(agent_deleted(self.server))
                await self.socket.close(code=4404, reason="the agent was deleted")
                return
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
