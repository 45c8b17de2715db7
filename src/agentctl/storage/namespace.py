"""Storage namespaces: one per agent of a platform, each fully apart from the others.

A namespace's name (any text: an agent's name) becomes a *slug* — lowercase ASCII letters,
digits and `_`, then `_` and a hash of the exact name — from which everything it owns is
named: the PostgreSQL schema `agent_<slug>`, the Redis keys and channels under
`<AGENTCTL_REDIS_PREFIX>:agent:<slug>:`, the SQLite files in `<AGENTCTL_DATA_DIR>/agents/<slug>/`.
The hash tells apart names that read alike once slugged ("My Agent", "my-agent"), and no
slug is a prefix of another's keys (each is followed by `:`). The default namespace (None)
is the storage of before namespaces: the connection's default schema, the bare prefix, the
data folder itself.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from agentctl.errors import Unprocessable

SCHEMA_PREFIX = "agent_"
_READABLE = 40  # characters of the name kept in the slug (a schema name has 63 bytes at most)
_HASH = 10  # hex digits of the name's hash


@dataclass(frozen=True)
class Namespace:
    """Where the data of namespace `name` lives. Build it with `Namespace.of(name)`."""

    name: str
    slug: str

    @classmethod
    def of(cls, name: str) -> Namespace:
        if not name:
            raise Unprocessable("a storage namespace needs a name (an agent's name)")
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        readable = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")[:_READABLE]
        digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH]
        return cls(name, f"{readable.rstrip('_')}_{digest}" if readable else digest)

    @property
    def schema(self) -> str:
        """The PostgreSQL schema: only [a-z0-9_], under 63 bytes, so quoting is a formality."""
        return SCHEMA_PREFIX + self.slug

    def redis_prefix(self, prefix: str) -> str:
        """The prefix of its Redis keys and channels, under the deployment's `prefix`."""
        return f"{prefix}:agent:{self.slug}"

    def folder(self, data_dir: Path) -> Path:
        """The folder of its SQLite files (and any other file of its own)."""
        return data_dir / "agents" / self.slug


def lock_key(base: int, schema: str | None) -> int:
    """The advisory lock key `base` for the tables of `schema`: `base` itself for the
    default schema (as before namespaces, so that replicas of either version agree), else a
    64-bit key of its own, so that each namespace's migrations and claims lock only it."""
    if schema is None:
        return base
    digest = hashlib.sha256(f"{base}:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def quoted(schema: str) -> str:
    """`schema` as an SQL identifier."""
    return '"' + schema.replace('"', '""') + '"'
