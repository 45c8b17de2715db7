"""`agentctl init` and `agentctl deploy --dry-run`, as a user runs them."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from agentctl.cli import COMMANDS
from agentctl.project import load_project
from agentctl.testing import ScriptedModelServer
from agentctl.testing.replicas import start_replica
from tests.conftest import RunCli

SCAFFOLD = [".env", ".gitignore", "AGENTS.md", "agent.toml", "mcp.json", "skills/review/SKILL.md"]


def test_init_creates_a_valid_project(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("init", "demo", cwd=tmp_path)
    assert result.exit_code == 0, result.err
    root = tmp_path / "demo"
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) == SCAFFOLD
    for path in SCAFFOLD:
        assert f"  {path}\n" in result.out
    assert "cd demo" in result.out
    assert "agentctl dev " in result.out
    assert "agentctl deploy --dry-run" in result.out
    project = load_project(root, environ={})
    assert (project.name, project.model) == ("demo", "openai:gpt-4.1")
    assert [s.name for s in project.skills] == ["review"]
    assert json.loads((root / "mcp.json").read_text()) == {"mcpServers": {}}
    assert (root / ".env").stat().st_mode & 0o077 == 0


def test_init_templates_document_every_allowed_value(tmp_path: Path, run_cli: RunCli) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    toml = (tmp_path / "demo/agent.toml").read_text()
    for value in ("none", "sandbox_a", "sandbox_b", "sandbox_c", "platform_sandbox"):
        assert value in toml
    for text in (
        "[sandbox]",
        "[auth]",
        "template",
        "image",
        "scope",
        "idp_a",
        "idp_b",
        "oidc",
        "issuer",
        "audience",
    ):
        assert f"# {text}" in toml or text in toml
    env = (tmp_path / "demo/.env").read_text()
    for name in ("OPENAI_API_KEY=", "PLATFORM_API_KEY=", "IDP_A_URL=", "IDP_B_SECRET_KEY="):
        assert name in env


def test_init_never_overwrites_without_force(run_cli: RunCli, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    root.mkdir()
    (root / "AGENTS.md").write_text("mine\n")
    (root / "agent.toml").write_text("mine\n")
    result = run_cli("init", "demo", cwd=tmp_path)
    assert result.exit_code == 1
    assert "error: these files already exist: AGENTS.md, agent.toml — pass --force" in result.err
    assert (root / "AGENTS.md").read_text() == "mine\n"
    assert not (root / "mcp.json").exists()


def test_init_force_overwrites(run_cli: RunCli, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    root.mkdir()
    (root / "AGENTS.md").write_text("mine\n")
    (root / ".gitignore").write_text("keep-me\n")
    result = run_cli("init", "demo", "--force", cwd=tmp_path)
    assert result.exit_code == 0
    assert (root / "AGENTS.md").read_text() != "mine\n"
    assert (root / ".gitignore").read_text() == "keep-me\n"


def test_init_never_puts_a_folder_where_a_file_is(run_cli: RunCli, tmp_path: Path) -> None:
    """Not even with --force: a file named like the project, or like one of its folders, is
    named in the error (exit 1, no traceback) and left as it was."""
    (tmp_path / "afile").write_text("mine\n")
    for args in (["afile"], ["afile/sub"], ["afile", "--force"]):
        result = run_cli("init", *args, cwd=tmp_path)
        assert result.exit_code == 1, args
        assert "error: afile is a file, not a folder — choose another name" in result.err
        assert "Traceback" not in result.err
    assert (tmp_path / "afile").read_text() == "mine\n"
    (tmp_path / "demo/skills").mkdir(parents=True)
    (tmp_path / "demo/skills/review").write_text("mine\n")
    result = run_cli("init", "demo", "--force", cwd=tmp_path)
    assert result.exit_code == 1
    assert "demo/skills/review is a file where init makes a folder — move it" in result.err
    assert not (tmp_path / "demo/agent.toml").exists()


def test_init_without_name_uses_the_current_folder(run_cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "My Agent!"
    folder.mkdir()
    result = run_cli("init", cwd=folder)
    assert result.exit_code == 0
    assert 'name = "My-Agent"' in (folder / "agent.toml").read_text()
    assert "cd " not in result.out


def test_init_rejects_an_invalid_name(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("init", "bad name", cwd=tmp_path)
    assert result.exit_code == 1
    assert 'error: "bad name" is not a valid agent name' in result.err
    assert not (tmp_path / "bad name").exists()


def test_dry_run_on_a_fresh_project_names_the_missing_key(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    result = run_cli("deploy", "--dry-run", cwd=tmp_path / "demo")
    assert result.exit_code == 1
    assert (
        "error: missing environment variables: OPENAI_API_KEY (for model openai:gpt-4.1)"
        in result.err
    )
    assert not (tmp_path / "demo/.agentctl/build").exists()


def test_dry_run_bundles_and_summarizes(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    root = tmp_path / "demo"
    with (root / ".env").open("a") as env:
        env.write("OPENAI_API_KEY=sk-test-key-123456\n")
    result = run_cli("deploy", "--dry-run", cwd=root)
    assert result.exit_code == 0, result.err
    assert "warning: PLATFORM_API_KEY is not set" in result.err
    assert "Revision " in result.out
    for label in ("agent", "model", "skills", "subagents", "mcp servers", "packages", "env"):
        assert f"  {label} " in result.out
    assert "review" in result.out
    assert "OPENAI_API_KEY" in result.out
    assert "sk-test-key-123456" not in result.out + result.err
    [build] = (root / ".agentctl/build").iterdir()
    assert str(build / "revision.tar.gz") in result.out
    assert (root / ".agentctl/.gitignore").read_text().splitlines()[-1] == "*"
    again = run_cli("deploy", "--dry-run", cwd=root)
    assert again.out == result.out


def test_real_deploy_names_every_missing_variable_at_once(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    result = run_cli("deploy", cwd=tmp_path / "demo")
    assert result.exit_code == 1
    [line] = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert line == (
        "error: missing environment variables: OPENAI_API_KEY (for model openai:gpt-4.1), "
        "PLATFORM_API_KEY (for deploy), "
        "PLATFORM_URL (for deploy: the URL of your agentctl serve) — "
        "set them in the project's .env or in the environment"
    )
    assert "Traceback" not in result.err


def test_real_deploy_needs_the_platform_url(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    env = {"OPENAI_API_KEY": "sk-1", "PLATFORM_API_KEY": "pk-1"}
    result = run_cli("deploy", cwd=tmp_path / "demo", env=env)
    assert result.exit_code == 1
    assert "PLATFORM_URL (for deploy: the URL of your agentctl serve)" in result.err


def test_dry_run_refuses_a_gate_on_a_misspelt_tool(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    root = tmp_path / "demo"
    with (root / "agent.toml").open("a") as toml:
        toml.write("\n[interrupt_on]\nwrite_fiel = true\n")
    result = run_cli("deploy", "--dry-run", cwd=root, env={"OPENAI_API_KEY": "sk-1"})
    assert result.exit_code == 1
    assert "built" not in result.out
    assert (
        'error: agent.toml: [interrupt_on].write_fiel: "write_fiel" is not a tool of this '
        "agent — did you mean write_file? Or gate one of its tools instead: delete, "
    ) in result.err
    assert not (root / ".agentctl/build").exists()


def test_real_deploy_says_when_the_platform_is_unreachable(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    env = {
        "OPENAI_API_KEY": "sk-1",
        "PLATFORM_API_KEY": "pk-1",
        "PLATFORM_URL": "http://127.0.0.1:9",
    }
    result = run_cli("deploy", cwd=tmp_path / "demo", env=env)
    assert result.exit_code == 1
    assert "error: cannot reach the platform at http://127.0.0.1:9" in result.err
    assert "Traceback" not in result.err


def test_help_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from agentctl.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('langgraph', 'langchain', 'deepagents', 'yaml', 'httpx') "
        "if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in out.stdout
    assert "HEAVY []" in out.stdout


def test_every_command_is_documented() -> None:
    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text()
    cli_doc = (root / "docs" / "cli.md").read_text()
    for name in COMMANDS:
        assert f"agentctl {name}" in readme
        assert f"## `agentctl {name}" in cli_doc


def test_unknown_command_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("launch")
    assert result.exit_code == 2
    assert "No such command 'launch'" in result.err


def test_dry_run_names_the_missing_identity_provider_variables(
    run_cli: RunCli, tmp_path: Path
) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    root = tmp_path / "demo"
    with (root / ".env").open("a") as env:
        env.write("OPENAI_API_KEY=sk-test-key-123456\nIDP_A_URL=https://auth.example.com\n")
    scaffolded = (root / "agent.toml").read_text()
    for provider, missing in (
        ("idp_a", "IDP_A_PUBLISHABLE_DEFAULT_KEY (for auth idp_a)"),
        ("idp_b", "IDP_B_SECRET_KEY (for auth idp_b)"),
    ):
        (root / "agent.toml").write_text(f'{scaffolded}\n[auth]\nprovider = "{provider}"\n')
        for args in (("deploy", "--dry-run"), ("deploy",)):
            result = run_cli(*args, cwd=root)
            assert result.exit_code == 1
            assert f"error: missing environment variables: {missing}" in result.err
            assert "Traceback" not in result.err
            assert not (root / ".agentctl/build").exists()


def test_every_option_is_documented() -> None:
    """Each option `--help` lists is in the command's heading of docs/cli.md, and in its
    line of the README's command table when that line shows options."""
    import importlib
    import re

    import click

    root = Path(__file__).parents[1]
    cli_doc = (root / "docs" / "cli.md").read_text()
    usage = dict(re.findall(r"^## `agentctl ([a-z-]+)(.*)`$", cli_doc, re.M))
    readme = {
        name: line
        for line in (root / "README.md").read_text().splitlines()
        for name in COMMANDS
        if line.startswith(f"| `agentctl {name} [--")
    }
    for name, (module, attribute, _) in COMMANDS.items():
        command: click.Command = getattr(importlib.import_module(module), attribute)
        for param in command.params:
            if isinstance(param, click.Option):
                flag = param.opts[0]
                assert flag in usage[name], f"docs/cli.md: agentctl {name} lacks {flag}"
                assert flag in readme.get(name, flag), f"README: agentctl {name} lacks {flag}"


def _on_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> bytes:
    """What `agentctl ARGS` writes to a terminal (a pseudo-terminal as its stdout/stderr)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "agentctl", *args], stdout=follower, stderr=follower, cwd=cwd,
        env={**os.environ, **env},
    )  # fmt: skip
    os.close(follower)
    output = b""
    with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
        while chunk := os.read(leader, 4096):
            output += chunk
    process.wait(30)
    os.close(leader)
    return output


def test_no_color_turns_colour_off_on_a_terminal(tmp_path: Path) -> None:
    coloured = _on_a_terminal(["init", "bad name!"], {}, tmp_path)
    assert b"\x1b[" in coloured
    assert b"is not a valid agent name" in coloured
    plain = _on_a_terminal(["init", "bad name!"], {"NO_COLOR": "1"}, tmp_path)
    assert b"\x1b[" not in plain
    assert b"error: " in plain


TRACE_KEY = "lsv2_pt_test-trace-key-must-never-leak"


def tracing_env(endpoint: str) -> str:
    return (
        f"LANGSMITH_API_KEY={TRACE_KEY}\nLANGSMITH_TRACING=true\n"
        f"LANGSMITH_PROJECT=deployed-demo\nLANGSMITH_ENDPOINT={endpoint}\n"
    )


def test_dry_run_sends_langsmith_variables_as_secrets(run_cli: RunCli, tmp_path: Path) -> None:
    run_cli("init", "demo", cwd=tmp_path)
    root = tmp_path / "demo"
    with (root / ".env").open("a") as env:
        env.write("OPENAI_API_KEY=sk-test-key-123456\n" + tracing_env("http://127.0.0.1:9"))
        env.write("LANGCHAIN_TRACING_V2=true\n")
    result = run_cli("deploy", "--dry-run", cwd=root)
    assert result.exit_code == 0, result.err
    secrets = re.search(r"^  secrets +(.+)$", result.out, re.MULTILINE)
    assert secrets is not None, result.out
    assert secrets.group(1).split(", ") == [
        "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGSMITH_ENDPOINT", "LANGSMITH_PROJECT",
        "LANGSMITH_TRACING", "OPENAI_API_KEY",
    ]  # fmt: skip
    assert TRACE_KEY not in result.out + result.err
    [build] = (root / ".agentctl/build").iterdir()
    archive = (build / "revision.tar.gz").read_bytes()
    assert TRACE_KEY.encode() not in gzip.decompress(archive)
    manifest = json.loads((build / "manifest.json").read_text())
    assert "LANGSMITH_API_KEY" in manifest["env_optional"]
    assert TRACE_KEY not in json.dumps(manifest)


class _Traces(http.server.BaseHTTPRequestHandler):
    """A LangSmith endpoint that records what reaches it."""

    seen: ClassVar[list[tuple[str, str, bytes]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, self.headers.get("x-api-key") or "", body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_a_deployed_revision_traces_to_langsmith(
    run_cli: RunCli, tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    traces = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Traces)
    threading.Thread(target=traces.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{traces.server_address[1]}"
    key = "pk-test-deployment-key-0123456789"
    replica = start_replica({"PLATFORM_API_KEY": key, **model_server.env}, tmp_path / "replica")
    try:
        run_cli("init", "demo", cwd=tmp_path)
        root = tmp_path / "demo"
        with (root / ".env").open("a") as env:
            env.write(tracing_env(endpoint))
        deploy_env = {**model_server.env, "PLATFORM_URL": replica.url, "PLATFORM_API_KEY": key}
        result = run_cli("deploy", cwd=root, env=deploy_env)
        assert result.exit_code == 0, result.err
        assert "LANGSMITH_API_KEY" in result.err  # Uploading… (secrets: …)
        headers = {"x-api-key": key}
        listed = httpx.get(f"{replica.url}/platform/revisions", headers=headers).json()
        assert {"LANGSMITH_API_KEY", "LANGSMITH_TRACING", "LANGSMITH_ENDPOINT"} <= set(
            listed[0]["secrets"]
        )
        body = {"assistant_id": "demo", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        answer = httpx.post(f"{replica.url}/runs/wait", json=body, headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 30
        while not any(sent_key == TRACE_KEY and b"deployed-demo" in data
                      for _, sent_key, data in _Traces.seen):  # fmt: skip
            assert time.monotonic() < deadline, "no trace reached the LangSmith endpoint"
            time.sleep(0.2)
        everything = result.out + result.err + json.dumps(listed) + replica.output()
        assert TRACE_KEY not in everything
    finally:
        replica.kill()
        traces.shutdown()
        traces.server_close()
