"""Where memory lives in the store.

    ("memories", A, "shared", "files")            /memories/AGENTS.md, /memories/skills/**
    ("memories", A, "subagent", S, "files")       /memories/subagents/S/AGENTS.md, skills/**
                                                  (subagent S's seeds, read-only)
    ("users", U, "memories", A, "files")          /memories/user/**            (per user U)
    ("users", U, "memories", A, "subagent", S, "files")
                                                  the rest of /memories/subagents/S/**
                                                  (what subagent S wrote for user U)

Everything of user U lives under `user_root(U)` = ("users", U): the server lets a signed-in
user reach the store there and nowhere else.

A store's search matches namespace *prefixes* (as tuples in memory, as `a.b.c%` strings in
PostgreSQL, as `a.b.c.*` globs in SQLite), and deepagents' `ls`, `glob` and `grep` search. So
no namespace may be a prefix of another across an isolation boundary, as tuples or as strings:

- every part is escaped with `escape_id`: letters, digits and `-` stay, every other UTF-8 byte
  becomes `~XX`, so no part holds `.` (the store's separator) nor a LIKE or glob wildcard;
- every namespace ends with the fixed part "files", so user "ab" cannot prefix user "abc":
  `users.ab.memories.A.files` is a prefix of no other namespace's string;
- a user's subagent namespace has "subagent" where the user's own has "files", so neither
  is a prefix of the other.

The escape is injective and reversible (`unescape_id`).
"""

from __future__ import annotations

import re

ROOT = "memories"
SHARED = "shared"
SUBAGENT = "subagent"
USERS = "users"
_KEEP = re.compile(rb"[A-Za-z0-9-]")
FILES = "files"


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
    return (ROOT, escape_id(assistant), SHARED, FILES)


def user_root(user_id: str) -> tuple[str, str]:
    """The prefix of every namespace that belongs to user `user_id`."""
    return (USERS, escape_id(user_id))


def user_namespace(assistant: str, user_id: str) -> tuple[str, ...]:
    return (*user_root(user_id), ROOT, escape_id(assistant), FILES)


def subagent_seeds_namespace(assistant: str, subagent: str) -> tuple[str, ...]:
    """Subagent S's `AGENTS.md` and skills, seeded from the revision: the same for everyone.

    Files subagents wrote before their memory became per user are left here, shown to no one.
    """
    return (ROOT, escape_id(assistant), SUBAGENT, escape_id(subagent), FILES)


def user_subagent_namespace(assistant: str, user_id: str, subagent: str) -> tuple[str, ...]:
    """What subagent S writes in the conversations of user `user_id`."""
    return (*user_root(user_id), ROOT, escape_id(assistant), SUBAGENT, escape_id(subagent), FILES)
