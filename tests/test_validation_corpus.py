"""One broken project per validation rule, each with its exact expected message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agentctl.errors import ConfigError
from agentctl.project import load_project
from agentctl.project.rules import RULES
from tests.conftest import RunCli

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
DOCS = Path(__file__).parents[1] / "docs" / "errors.md"


UNREADABLE = {"file-unreadable": "skills/review/secret.txt"}  # case -> file made unreadable
ENLARGED = {"revision-too-large": "skills/data/dataset.bin"}  # case -> file made 1 GiB, sparse
_LOAD = (
    "import sys\n"
    "from agentctl.errors import ConfigError\n"
    "from agentctl.project import load_project\n"
    "try:\n    load_project('agent.toml', environ={})\n"
    "except ConfigError as e:\n    sys.stdout.write(''.join(str(p) + '\\n' for p in e.problems))\n"
)


def problems_of(case: str, monkeypatch: pytest.MonkeyPatch) -> str:
    if case in UNREADABLE:
        return unreadable_problems(case)
    if case in ENLARGED:
        return enlarged_problems(case, monkeypatch)
    monkeypatch.chdir(CORPUS / case)
    with pytest.raises(ConfigError) as caught:
        load_project("agent.toml", environ={})
    return "\n".join(str(p) for p in caught.value.problems) + "\n"


def unreadable_problems(case: str) -> str:
    """Load a copy of the case with one file made unreadable, as an unprivileged user
    (root reads any file, so as root the loader runs under `setpriv` as nobody)."""
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        project = Path(shutil.copytree(CORPUS / case, folder / case))
        (project / UNREADABLE[case]).chmod(0)
        command = [sys.executable, "-c", _LOAD]
        if os.geteuid() == 0:
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=True)
        return done.stdout
    finally:
        shutil.rmtree(folder)


def enlarged_problems(case: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Load a copy of the case with one file made a sparse file of 1 GiB (no disk used)."""
    with tempfile.TemporaryDirectory() as folder:
        project = Path(shutil.copytree(CORPUS / case, Path(folder) / case))
        os.truncate(project / ENLARGED[case], 1 << 30)
        monkeypatch.chdir(project)
        with pytest.raises(ConfigError) as caught:
            load_project("agent.toml", environ={})
        monkeypatch.undo()
    return "\n".join(str(p) for p in caught.value.problems) + "\n"


@pytest.mark.parametrize("case", CASES)
def test_broken_project_gives_its_exact_message(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = (CORPUS / case / "expected.txt").read_text()
    assert problems_of(case, monkeypatch) == expected


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c.startswith("_") and c not in {*UNREADABLE, *ENLARGED}]
)
def test_case_reports_the_rule_it_is_named_after(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CORPUS / case)
    with pytest.raises(ConfigError) as caught:
        load_project("agent.toml", environ={})
    assert case.split("--")[0] in {p.rule for p in caught.value.problems}


def test_every_rule_has_a_broken_project() -> None:
    covered = {case.split("--")[0] for case in CASES}
    assert set(RULES) - covered == set()


def test_every_rule_is_documented() -> None:
    docs = DOCS.read_text()
    undocumented = [rule_id for rule_id in RULES if f"`{rule_id}`" not in docs]
    assert undocumented == []


def test_all_problems_are_reported_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    text = problems_of("_all-at-once", monkeypatch)
    files = {line.split(":")[0] for line in text.splitlines() if ": " in line}
    assert {"AGENTS.md", "agent.toml", "mcp.json", "subagents/a/agent.toml"} <= files


def test_cli_prints_each_problem_and_exits_1_without_traceback(run_cli: RunCli) -> None:
    result = run_cli("deploy", "--dry-run", cwd=CORPUS / "_all-at-once")
    assert result.exit_code == 1
    assert "Traceback" not in result.err + result.out
    lines = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert lines[0] == (
        "error: AGENTS.md: is missing — create AGENTS.md with the agent's instructions "
        "(its system prompt)"
    )
    assert len(lines) == 8
    assert result.err.rstrip().endswith("8 problems found.")


def test_missing_config_names_the_path_and_the_fix(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("deploy", "--dry-run", "--config", "nowhere/agent.toml", cwd=tmp_path)
    assert result.exit_code == 1
    assert (
        "error: nowhere/agent.toml: not found — run `agentctl init` here, or pass --config PATH"
        in result.err
    )


@pytest.mark.slow
def test_error_docs_are_generated_from_the_rule_table() -> None:
    script = Path(__file__).parents[1] / "scripts" / "gen_errors_doc.py"
    check = subprocess.run([sys.executable, str(script), "--check"], check=False)
    assert check.returncode == 0, "docs/errors.md is stale: run python scripts/gen_errors_doc.py"
