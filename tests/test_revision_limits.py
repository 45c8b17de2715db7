"""A revision's size and file count are bounded: a project past them is refused by
`deploy --dry-run` and `dev` before its files are read (a sparse file counts at its apparent
size), an archive past them before it is unpacked, each naming the file and the setting."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from agentctl.bundle.limits import RevisionLimits
from agentctl.bundle.revision import build_revision, extract_revision, hash_archive
from agentctl.errors import ConfigError, RevisionTooLarge
from agentctl.project import load_project
from tests.conftest import RunCli, WriteFiles

GIB = 1 << 30
MIB = 1 << 20
SKILL = "---\nname: data\ndescription: Looks things up\n---\nSee dataset.bin.\n"
PROJECT = {
    "agent.toml": '[agent]\nname = "big"\nmodel = "openai:gpt-4.1"\n',
    "AGENTS.md": "You look things up.\n",
    "skills/data/SKILL.md": SKILL,
    "skills/data/dataset.bin": "rows\n",
}
SRC = Path(__file__).parents[1] / "src"


def _sparse(root: Path, file: str, size: int) -> None:
    os.truncate(root / file, size)  # a hole: no disk used, nothing to read but zeros


def _problems(root: Path, limits: RevisionLimits) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_project(root, environ={}, limits=limits)
    return [str(p) for p in caught.value.problems]


def test_deploy_dry_run_refuses_a_sparse_gigabyte_without_reading_it(
    write_files: WriteFiles, tmp_path: Path
) -> None:
    """The file is never read: the process's peak resident memory, from the kernel, stays far
    below the file's size, and no revision is written. (The command runs as a grandchild,
    forked by a shell: a child forked by this process would count its memory as its own.)"""
    root = write_files(PROJECT)
    _sparse(root, "skills/data/dataset.bin", GIB)
    env = {**os.environ, "PYTHONPATH": str(SRC), "OPENAI_API_KEY": "sk-test"}
    env.pop("AGENTCTL_MAX_REVISION_MB", None)
    peak = tmp_path / "peak"
    command = (
        "import atexit, resource, runpy, sys; "
        f"atexit.register(lambda: open({str(peak)!r}, 'w').write("
        "str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))); "
        "sys.argv = ['agentctl', 'deploy', '--dry-run']; "
        "runpy.run_module('agentctl', run_name='__main__')"
    )
    process = subprocess.run(
        ["sh", "-c", 'exec "$0" -c "$1" & wait $!', sys.executable, command],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    said = process.stderr
    assert process.returncode == 1, said
    assert "Traceback" not in said
    assert (
        "error: skills/data/dataset.bin: is 1024.0 MiB, more than a whole revision may hold "
        "(limit 256 MiB) — make it smaller or leave it out of the project, or raise "
        "AGENTCTL_MAX_REVISION_MB (where you run agentctl, and on the server)"
    ) in said
    assert not (root / ".agentctl" / "build").exists()
    assert int(peak.read_text()) < 256 * 1024  # KiB; reading the file would take over 1 GiB


@pytest.mark.parametrize("command", [["deploy", "--dry-run"], ["dev"]])
def test_the_limits_are_settings_of_deploy_and_dev(
    command: list[str], run_cli: RunCli, write_files: WriteFiles
) -> None:
    root = write_files(PROJECT)
    (root / "skills/data/dataset.bin").write_bytes(b"r" * (2 * MIB))
    env = {"OPENAI_API_KEY": "sk-test", "AGENTCTL_MAX_REVISION_MB": "1"}
    result = run_cli(*command, cwd=root, env=env)
    assert result.exit_code == 1
    assert "error: skills/data/dataset.bin: is 2.0 MiB" in result.err
    assert "(limit 1 MiB)" in result.err
    assert "raise AGENTCTL_MAX_REVISION_MB" in result.err
    assert not (root / ".agentctl" / "build").exists()

    env = {"OPENAI_API_KEY": "sk-test", "AGENTCTL_MAX_REVISION_MB": "3"}
    assert run_cli("deploy", "--dry-run", cwd=root, env=env).exit_code == 0


def test_files_too_large_together_or_too_many_name_the_largest_and_the_fullest_folder(
    write_files: WriteFiles,
) -> None:
    root = write_files(PROJECT)
    (root / "skills/data/dataset.bin").write_bytes(b"d" * (700 * 1024))
    (root / "skills/data/index.bin").write_bytes(b"i" * (400 * 1024))
    assert _problems(root, RevisionLimits(max_revision_mb=1)) == [
        "skills/data/dataset.bin: is 0.7 MiB of the 1.1 MiB the project's files hold "
        "together, more than a revision may hold (limit 1 MiB) — make it smaller or leave it "
        "out of the project, or raise AGENTCTL_MAX_REVISION_MB (where you run agentctl, and "
        "on the server)"
    ]
    for i in range(6):
        (root / f"skills/data/part-{i}.txt").write_text("p\n")
    assert _problems(root, RevisionLimits(max_revision_files=8)) == [
        "skills/data/: holds 9 of the project's 11 files, more than a revision may hold "
        "(limit 8 files) — leave some of its files out of the project, or raise "
        "AGENTCTL_MAX_REVISION_FILES (where you run agentctl, and on the server)"
    ]
    load_project(root, environ={}, limits=RevisionLimits(max_revision_files=11))


def test_an_oversized_prompt_is_reported_once_and_not_read(write_files: WriteFiles) -> None:
    root = write_files(PROJECT)
    _sparse(root, "AGENTS.md", GIB)
    _sparse(root, "skills/data/SKILL.md", GIB)
    problems = _problems(root, RevisionLimits())
    assert [p.split(":")[0] for p in problems] == ["AGENTS.md", "skills/data/SKILL.md"]
    assert all("is 1024.0 MiB, more than a whole revision may hold" in p for p in problems)


# -- archives, as a replica reads them ---------------------------------------------------


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read without holding them."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def crafted_archive(members: Mapping[str, bytes | int]) -> bytes:
    """A gzipped tar holding `members` (a size: that many zero bytes, compressed away)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=9) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = data if isinstance(data, int) else len(data)
            source = _Zeros(data) if isinstance(data, int) else io.BytesIO(data)
            tar.addfile(info, source)
    return raw.getvalue()


def test_an_archive_past_the_limits_is_refused_from_its_headers(
    write_files: WriteFiles, tmp_path: Path
) -> None:
    limits = RevisionLimits(max_revision_mb=16, max_revision_files=5)
    archive = crafted_archive({"AGENTS.md": b"Hi\n", "skills/data/dataset.bin": 64 * MIB})
    assert len(archive) < MIB
    out = tmp_path / "out"
    with pytest.raises(RevisionTooLarge) as caught:
        extract_revision(archive, out, limits)
    assert str(caught.value) == (
        "revision archive: skills/data/dataset.bin is 64.0 MiB, more than a whole revision "
        "may hold (limit 16 MiB, set by AGENTCTL_MAX_REVISION_MB on the server) — make it "
        "smaller or leave it out of the project, or raise the limit"
    )
    assert caught.value.status == 413
    assert not (out / "skills").exists()  # refused before it was written
    assert (out / "AGENTS.md").read_text() == "Hi\n"

    together = crafted_archive({f"f{i}": 6 * MIB for i in range(3)})
    with pytest.raises(RevisionTooLarge, match="f2 takes the revision's files past the size"):
        hash_archive(together, limits)
    many = crafted_archive({f"f{i}": b"x" for i in range(6)})
    with pytest.raises(RevisionTooLarge, match="f5 is one file more than a revision may hold"):
        hash_archive(many, limits)
    revision = build_revision(load_project(write_files(PROJECT), environ={}))
    manifest, digests = hash_archive(revision.archive, limits)
    assert manifest is not None
    assert sorted(digests) == sorted(PROJECT)
