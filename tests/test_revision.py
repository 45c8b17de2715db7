"""Revisions: deterministic archives and manifests that never carry secrets."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from agentctl.bundle.revision import build_revision, extract_revision, read_archive
from agentctl.errors import UserError
from agentctl.project import load_project
from tests.conftest import WriteFiles
from tests.test_project import FULL_PROJECT


def test_same_project_gives_the_same_bytes(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    first = build_revision(load_project(root, environ={}))
    for path in root.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    (root / "AGENTS.md").chmod(0o600)
    second = build_revision(load_project(root, environ={}))
    assert first.archive == second.archive
    assert first.id == second.id


def test_same_content_in_another_folder_gives_the_same_id(write_files: WriteFiles) -> None:
    one = build_revision(load_project(write_files(FULL_PROJECT, "one"), environ={}))
    two = build_revision(load_project(write_files(FULL_PROJECT, "two"), environ={}))
    assert one.id == two.id


def test_one_byte_of_a_skill_changes_the_id(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    before = build_revision(load_project(root, environ={}))
    script = root / "skills/review/scripts/check.py"
    script.write_text(script.read_text().replace("ok", "ok!"))
    after = build_revision(load_project(root, environ={}))
    assert before.id != after.id


def test_archive_entries_are_sorted_with_fixed_metadata(write_files: WriteFiles) -> None:
    revision = build_revision(load_project(write_files(FULL_PROJECT), environ={}))
    with tarfile.open(fileobj=io.BytesIO(revision.archive), mode="r:gz") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert {(m.mtime, m.mode, m.uid, m.gid, m.uname) for m in members} == {
        (315532800, 0o644, 0, 0, "")
    }


def test_archive_holds_the_project_files_and_nothing_else(write_files: WriteFiles) -> None:
    revision = build_revision(load_project(write_files(FULL_PROJECT), environ={}))
    assert sorted(read_archive(revision.archive)) == [
        "AGENTS.md",
        "agent.toml",
        "manifest.json",
        "mcp.json",
        "skills/review/SKILL.md",
        "skills/review/scripts/check.py",
        "subagents/research/AGENTS.md",
        "subagents/research/agent.toml",
        "subagents/research/mcp.json",
        "subagents/research/skills/search/SKILL.md",
        "subagents/writer/AGENTS.md",
        "subagents/writer/agent.toml",
        "user/AGENTS.md",
    ]


def test_secrets_are_in_neither_archive_nor_manifest(write_files: WriteFiles) -> None:
    root = write_files(FULL_PROJECT)
    project = load_project(root, environ={"ANTHROPIC_API_KEY": "sk-ant-secret-value"})
    revision = build_revision(project)
    files = read_archive(revision.archive)
    blob = b"".join(files.values()) + repr(revision.manifest).encode()
    for secret in (b"from-dotenv", b"sk_test", b"sk-ant-secret-value"):
        assert secret not in blob
    assert ".env" not in files


def test_manifest_describes_the_revision(write_files: WriteFiles) -> None:
    revision = build_revision(load_project(write_files(FULL_PROJECT), environ={}))
    manifest = revision.manifest
    assert manifest["id"] == revision.id
    assert len(revision.id) == 64
    assert manifest["agent"] == {
        "name": "demo",
        "model": "anthropic:claude-sonnet-4-5",
        "instructions": "AGENTS.md",
    }
    assert manifest["skills"] == [
        {"name": "review", "description": "Reviews code", "path": "skills/review"}
    ]
    assert manifest["user_template"] == "user/AGENTS.md"
    research, writer = manifest["subagents"]
    assert research["model"] == "openai:gpt-4.1-mini"
    assert not research["model_inherited"]
    assert writer["model"] == "anthropic:claude-sonnet-4-5"
    assert writer["model_inherited"]
    assert research["skills"][0]["name"] == "search"
    assert research["mcp_servers"] == [
        {"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp", "headers": []}
    ]
    assert manifest["mcp_servers"][0] == {
        "name": "docs",
        "transport": "http",
        "url": "https://docs.example.com/mcp",
        "headers": ["Authorization"],
    }
    assert "ANTHROPIC_API_KEY" in manifest["env"]
    assert "langchain-anthropic>=1.7,<2" in manifest["packages"]
    listed = {f["path"] for f in manifest["files"]}
    assert listed == set(read_archive(revision.archive)) - {"manifest.json"}


def test_config_with_another_name_is_stored_as_agent_toml(write_files: WriteFiles) -> None:
    root = write_files({"prod.toml": '[agent]\nname = "p"\n', "AGENTS.md": "Hi\n"})
    files = read_archive(build_revision(load_project(root / "prod.toml", environ={})).archive)
    assert files["agent.toml"] == b'[agent]\nname = "p"\n'
    assert "prod.toml" not in files


def test_written_revision_round_trips(write_files: WriteFiles, tmp_path: Path) -> None:
    revision = build_revision(load_project(write_files(FULL_PROJECT), environ={}))
    folder = revision.write(tmp_path / "build")
    assert folder.name == revision.short_id
    assert (folder / "revision.tar.gz").read_bytes() == revision.archive


def test_extracted_revision_loads_as_the_same_project(
    write_files: WriteFiles, tmp_path: Path
) -> None:
    revision = build_revision(load_project(write_files(FULL_PROJECT), environ={}))
    folder = extract_revision(revision.archive, tmp_path / "extracted")
    again = build_revision(load_project(folder, environ={"DOCS_TOKEN": "t"}))
    assert again.id == revision.id


def test_unsafe_archive_paths_are_refused(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(UserError, match="unsafe path"):
        extract_revision(raw.getvalue(), tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


def test_archive_with_a_link_or_garbage_is_refused(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        info = tarfile.TarInfo("AGENTS.md")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(UserError, match=r"non-file entry: 'AGENTS\.md'"):
        extract_revision(raw.getvalue(), tmp_path / "out")
    with pytest.raises(UserError, match="not a revision archive"):
        extract_revision(b"not a tarball", tmp_path / "out")


def test_manifest_keeps_the_oidc_issuer_and_audience(write_files: WriteFiles) -> None:
    root = write_files(
        {
            "agent.toml": '[agent]\nname = "demo"\n\n[auth]\nprovider = "oidc"\n'
            'issuer = "https://login.example.com"\naudience = "agents"\n',
            "AGENTS.md": "You help.\n",
        }
    )
    manifest = build_revision(load_project(root, environ={})).manifest
    assert manifest["auth"] == {
        "provider": "oidc",
        "issuer": "https://login.example.com",
        "audience": "agents",
    }
