"""Server-sent events framed as the LangGraph API frames them."""

from __future__ import annotations

from starlette.responses import Response

HEARTBEAT = b": heartbeat\r\n\r\n"
HEARTBEAT_SECONDS = 5.0


def frame(event: str, data: bytes, event_id: str | None = None) -> bytes:
    head = b"event: " + event.encode() + b"\r\ndata: " + data + b"\r\n"
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\r\n"
    return head + b"\r\n"


def stream_headers(location: str | None, content_location: str | None) -> dict[str, str]:
    headers = {
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
    }
    if location:
        headers["Location"] = location
    if content_location:
        headers["Content-Location"] = content_location
    return headers


class EventStream(Response):
    """An SSE response, for the OpenAPI document (the routes build their own)."""

    media_type = "text/event-stream"
