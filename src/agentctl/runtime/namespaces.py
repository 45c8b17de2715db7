"""Where memory lives in the store.

Every namespace starts `("memories", <assistant>, <kind>, …)` and none is a prefix of another
across an isolation boundary (the store's search matches namespace prefixes, so a careless
layout would leak one user's files into another's `ls`, `glob` or `grep`):

    ("memories", A, "shared")            /memories/AGENTS.md, /memories/skills/**
    ("memories", A, "user", U)           /memories/user/**            U = escape_id(user id)
    ("memories", A, "subagent", S)       /memories/subagents/S/**

Assistant and subagent names are validated to `[A-Za-z0-9_-]`; user ids can be anything, so
they are escaped: letters, digits, `-` and `_` stay, every other byte of their UTF-8 becomes
`~XX`. The escape is injective, never contains `.` (the store's separator) nor glob characters.
"""

from __future__ import annotations

import re

ROOT = "memories"
SHARED = "shared"
USER = "user"
SUBAGENT = "subagent"
_KEEP = re.compile(rb"[A-Za-z0-9_-]")


def escape_id(raw: str) -> str:
    """A namespace-safe, reversible form of any user id."""
    return "".join(
        chr(byte) if _KEEP.fullmatch(bytes([byte])) else f"~{byte:02X}"
        for byte in raw.encode("utf-8")
    )


def unescape_id(escaped: str) -> str:
    out = bytearray()
    index = 0
    while index < len(escaped):
        if escaped[index] == "~":
            out.append(int(escaped[index + 1 : index + 3], 16))
            index += 3
        else:
            out.append(ord(escaped[index]))
            index += 1
    return out.decode("utf-8")


def shared_namespace(assistant: str) -> tuple[str, ...]:
    return (ROOT, assistant, SHARED)


def user_namespace(assistant: str, user_id: str) -> tuple[str, ...]:
    return (ROOT, assistant, USER, escape_id(user_id))


def subagent_namespace(assistant: str, subagent: str) -> tuple[str, ...]:
    return (ROOT, assistant, SUBAGENT, subagent)
