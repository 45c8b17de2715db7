"""The immutable revision: a deterministic archive of the project and its manifest.

The same project gives the same bytes: entries are sorted, with fixed mtimes, modes and
owners, and gzip carries no timestamp. The revision id is the SHA-256 of the manifest,
which itself holds the SHA-256 of every file. `.env` and secrets are never included.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from agentctl.bundle.limits import ArchiveTally, RevisionLimits
from agentctl.bundle.requirements import requirements_of
from agentctl.errors import UserError
from agentctl.project.loader import CONFIG_FILE, INSTRUCTIONS_FILE, USER_DIR
from agentctl.project.model import McpServer, Project

MANIFEST_FILE = "manifest.json"
ARCHIVE_FILE = "revision.tar.gz"
FORMAT_VERSION = 1
_EPOCH = 315532800  # 1980-01-01, the oldest time every archive tool accepts
USER_TEMPLATE = f"{USER_DIR}/{INSTRUCTIONS_FILE}"
DEFAULT_LIMITS = RevisionLimits()


@dataclass(frozen=True)
class Revision:
    id: str
    manifest: dict[str, Any]
    archive: bytes

    @property
    def short_id(self) -> str:
        return self.id[:12]

    def write(self, folder: Path) -> Path:
        """Write `revision.tar.gz` and `manifest.json` into `folder/<short id>/`."""
        target = folder / self.short_id
        target.mkdir(parents=True, exist_ok=True)
        (target / ARCHIVE_FILE).write_bytes(self.archive)
        (target / MANIFEST_FILE).write_text(json.dumps(self.manifest, indent=2) + "\n")
        return target


def build_revision(project: Project) -> Revision:
    contents = _contents(project)
    manifest = _manifest(project, contents)
    manifest["id"] = hashlib.sha256(canonical(manifest)).hexdigest()
    contents[MANIFEST_FILE] = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    return Revision(id=manifest["id"], manifest=manifest, archive=_archive(contents))


def deployed_variables(manifest: dict[str, Any]) -> list[str]:
    """The variables whose values a deploy sends: the revision's required ones, and the
    optional ones its providers read (e.g. `OPENAI_BASE_URL`)."""
    return [*manifest["env"], *manifest.get("env_optional", ())]


def read_archive(data: bytes, limits: RevisionLimits = DEFAULT_LIMITS) -> dict[str, bytes]:
    """The files of a revision archive, by path."""
    with _archive_errors():
        return {name: reader.read() for name, reader in _entries(data, limits)}


def hash_archive(data: bytes, limits: RevisionLimits) -> tuple[bytes | None, dict[str, str]]:
    """A revision archive's manifest (None when it has none) and the SHA-256 of each of
    its other files, by path; no file is held whole."""
    manifest: bytes | None = None
    digests: dict[str, str] = {}
    with _archive_errors():
        for name, reader in _entries(data, limits):
            if name == MANIFEST_FILE:
                manifest = reader.read()
                continue
            digest = hashlib.sha256()
            while chunk := reader.read(_CHUNK):
                digest.update(chunk)
            digests[name] = digest.hexdigest()
    return manifest, digests


def extract_revision(archive: bytes, folder: Path, limits: RevisionLimits = DEFAULT_LIMITS) -> Path:
    """Unpack a revision into `folder` (created) and return it; refuses unsafe paths, and
    entries past `limits` before writing them."""
    with _archive_errors():
        for path, reader in _entries(archive, limits):
            parts = PurePosixPath(path).parts
            if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
                raise UserError(f"revision archive holds an unsafe path: {path!r}")
            target = folder.joinpath(*parts)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    while chunk := reader.read(_CHUNK):
                        out.write(chunk)
            except OSError as exc:
                raise UserError(f"revision archive cannot be unpacked at {path!r}: {exc}") from None
    return folder


_CHUNK = 1024 * 1024


def _entries(data: bytes, limits: RevisionLimits) -> Iterator[tuple[str, IO[bytes]]]:
    """Each file of a revision archive with a reader of its bytes, in order. An entry is
    checked from its header before any of its data is read: refused past `limits`
    (`RevisionTooLarge`), or when it is not a plain file."""
    tally = ArchiveTally(limits)
    # (Not the stream mode "r|gz": it inflates 10 KiB of input at a time whole, up to 10 MiB.)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                raise UserError(f"revision archive holds a non-file entry: {member.name!r}")
            tally.add(member.name, member.size, counted=member.name != MANIFEST_FILE)
            reader = tar.extractfile(member)
            assert reader is not None  # a plain file's
            yield member.name, reader


@contextmanager
def _archive_errors() -> Iterator[None]:
    """Reading a damaged archive is a `UserError` naming the damage."""
    try:
        yield
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise UserError(f"not a revision archive: {exc}") from None


def _contents(project: Project) -> dict[str, bytes]:
    """Archive path -> bytes. The config file is always stored as agent.toml."""
    contents = {
        (CONFIG_FILE if path == project.config_file else path): project.contents[path]
        for path in project.files
    }
    if project.user_template is not None:
        contents.setdefault(USER_TEMPLATE, b"")
    return contents


def _auth(project: Project) -> dict[str, str] | None:
    if project.auth is None:
        return None
    return {key: value for key, value in asdict(project.auth).items() if value is not None}


def _manifest(project: Project, contents: dict[str, bytes]) -> dict[str, Any]:
    requirements = requirements_of(project)
    return {
        "format": FORMAT_VERSION,
        "agent": {"name": project.name, "model": project.model, "instructions": INSTRUCTIONS_FILE},
        "sandbox": {
            "provider": project.sandbox.provider,
            "template": project.sandbox.template,
            "image": project.sandbox.image,
            "scope": project.sandbox.scope,
        },
        "auth": _auth(project),
        "interrupt_on": {
            tool: {"allowed_decisions": list(gate.allowed_decisions)}
            for tool, gate in sorted(project.interrupt_on.items())
        },
        "skills": [
            {"name": s.name, "description": s.description, "path": s.path} for s in project.skills
        ],
        "user_template": USER_TEMPLATE if project.user_template is not None else None,
        "subagents": [
            {
                "name": sub.name,
                "description": sub.description,
                "model": sub.model or project.model,
                "model_inherited": sub.model is None,
                "path": sub.path,
                "instructions": f"{sub.path}/{INSTRUCTIONS_FILE}",
                "skills": [
                    {"name": s.name, "description": s.description, "path": s.path}
                    for s in sub.skills
                ],
                "mcp_servers": [_server(m) for m in sub.mcp_servers],
            }
            for sub in project.subagents
        ],
        "mcp_servers": [_server(m) for m in project.mcp_servers],
        "packages": [p.requirement for p in requirements.packages],
        "env": list(requirements.env_names),
        "env_optional": list(requirements.optional_env),
        "files": [
            {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            for path, data in sorted(contents.items())
        ],
    }


def _server(server: McpServer) -> dict[str, Any]:
    """An MCP server as the manifest shows it: `${VAR}` templates, header names only; for a
    user-owned server its scopes and client id (never its secret)."""
    shown: dict[str, Any] = {
        "name": server.name,
        "transport": server.transport,
        "url": server.url,
        "headers": sorted(server.headers),
    }
    if server.agent is not None:
        shown["agent"] = server.agent
    if server.description is not None:
        shown["description"] = server.description
    if server.oauth is not None:
        shown["oauth"] = {"scopes": list(server.oauth.scopes), "client_id": server.oauth.client_id}
    return shown


def called_agents(manifest: dict[str, Any]) -> set[str]:
    """The agents of the platform a revision's mcp.json files name, from its manifest."""
    servers = [*manifest.get("mcp_servers", [])]
    for sub in manifest.get("subagents", []):
        servers += sub.get("mcp_servers", [])
    return {server["agent"] for server in servers if "agent" in server}


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _archive(contents: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(contents):
            data = contents[path]
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mtime = _EPOCH
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
