"""The thread-centric stream protocol the newest LangGraph SDKs speak.

A client sends commands (`POST /threads/{id}/commands`, or frames on a WebSocket) and
subscribes to the thread's events (`POST /threads/{id}/stream/events` as SSE, or the same
path as a WebSocket). The events are projected from the thread's event log, so every run on
the thread — whoever started it, on whichever replica — is carried, and a client that
reconnects with `since` gets exactly what it missed.
"""
