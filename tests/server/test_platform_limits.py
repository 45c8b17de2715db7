"""A revision posted to `agentctl serve` past its size limit is refused (413) from its
archive's headers, before anything is unpacked, and the replica's memory stays small."""

from __future__ import annotations

import base64
import hashlib
import json
import tracemalloc
from pathlib import Path

from agentctl.bundle.revision import MANIFEST_FILE, build_revision, canonical, read_archive
from agentctl.project import load_project
from agentctl.settings import Settings
from agentctl.testing import ScriptedModelServer
from tests.server.conftest import PLATFORM_KEY, PLATFORM_OPERATOR, agent_files, platform_at
from tests.test_revision_limits import MIB, crafted_archive

BIG = 256 * MIB


def _zeros_sha256(size: int) -> str:
    digest = hashlib.sha256()
    chunk = bytes(MIB)
    for _ in range(size // MIB):
        digest.update(chunk)
    return digest.hexdigest()


def revision_with_a_big_file(root: Path, secrets: dict[str, str]) -> bytes:
    """A revision archive as `agentctl deploy` would make it of a project holding a skill
    file of 256 MiB of zeros (a quarter of a MiB compressed), made without holding it."""
    agent_files(root, "big", "You look things up.")
    (root / "skills/data").mkdir(parents=True)
    (root / "skills/data/SKILL.md").write_text(
        "---\nname: data\ndescription: Looks things up\n---\nSee dataset.bin.\n"
    )
    (root / "skills/data/dataset.bin").write_bytes(b"")
    small = build_revision(load_project(root, environ=secrets))
    manifest = dict(small.manifest)
    del manifest["id"]
    entry = {"path": "skills/data/dataset.bin", "sha256": _zeros_sha256(BIG), "size": BIG}
    manifest["files"] = [entry if f["path"] == entry["path"] else f for f in manifest["files"]]
    manifest["id"] = hashlib.sha256(canonical(manifest)).hexdigest()
    members: dict[str, bytes | int] = dict(read_archive(small.archive))
    members[MANIFEST_FILE] = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    members["skills/data/dataset.bin"] = BIG
    return crafted_archive(dict(sorted(members.items())))


async def test_a_revision_past_the_size_limit_is_refused_before_it_is_unpacked(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    data = tmp_path / "platform"
    settings = Settings.from_env(
        {"PLATFORM_API_KEY": PLATFORM_KEY, "AGENTCTL_DATA_DIR": str(data),
         "AGENTCTL_MAX_REVISION_MB": "16"}
    )  # fmt: skip
    secrets = {**model_server.env, "OPENAI_API_KEY": "sk-big"}
    archive = revision_with_a_big_file(tmp_path / "big", secrets)
    assert len(archive) < MIB
    body = {"archive": base64.b64encode(archive).decode(), "secrets": secrets}
    async with platform_at(settings) as (_, http):
        tracemalloc.start()
        try:
            answer = await http.post("/platform/revisions", json=body, headers=PLATFORM_OPERATOR)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert answer.status_code == 413, answer.text
        assert answer.json()["detail"] == (
            "revision archive: skills/data/dataset.bin is 256.0 MiB, more than a whole "
            "revision may hold (limit 16 MiB, set by AGENTCTL_MAX_REVISION_MB on the server) "
            "— make it smaller or leave it out of the project, or raise the limit"
        )
        assert peak < 4 * MIB  # what the request allocated, at most: not the file
        assert not list(data.rglob("dataset.bin"))  # nothing unpacked
        listed = await http.get("/platform/agents", headers=PLATFORM_OPERATOR)
        assert listed.json() == []  # and no agent made of it
