"""docs/deployment.md's "Without Docker" recipe, run as written: its shell blocks in one bash,
with a throwaway database and user, a Redis prefix and free ports in place of the guide's."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from agentctl.testing import ScriptedModelServer
from agentctl.testing.services import free_port

GUIDE = Path(__file__).parents[2] / "docs" / "deployment.md"


def guide_blocks() -> list[str]:
    """The shell blocks of the section, in order."""
    text = GUIDE.read_text()
    section = text[text.index("## Without Docker") : text.index("## Kubernetes")]
    return [textwrap.dedent(block) for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def replace(text: str, swaps: dict[str, str]) -> str:
    for old, new in swaps.items():
        assert old in text, f"the guide no longer says {old!r}: update this test"
        text = text.replace(old, new)
    return text


@pytest.mark.sandbox
@pytest.mark.slow
def test_the_guide_without_docker_works_as_written(
    postgres_admin_url: str,
    redis_server_url: str,
    redis_prefix: str,
    model_server: ScriptedModelServer,
    tmp_path: Path,
) -> None:
    install, database, settings, sandbox, replicas, deploy = guide_blocks()
    # The install takes minutes: this environment's agentctl stands in for it.
    assert "pip install ." in install
    install = f"export PATH={Path(sys.executable).parent}:$PATH\n" + install.splitlines()[-1]
    name = f"agentctl_guide_{uuid.uuid4().hex[:8]}"
    pg, redis = urlsplit(postgres_admin_url), urlsplit(redis_server_url)
    database = replace(
        database,
        {
            "psql -h 127.0.0.1 -U postgres": f'psql "{postgres_admin_url}"',
            "USER agentctl ": f"USER {name} ",
            "DATABASE agentctl OWNER agentctl": f"DATABASE {name} OWNER {name}",
            "redis-cli -h 127.0.0.1 -p 6379": f"redis-cli -h {redis.hostname} -p {redis.port}",
        },
    )
    settings = replace(
        settings,
        {
            "agentctl:change-me@127.0.0.1:5432/agentctl": (
                f"{name}:change-me@{pg.hostname}:{pg.port}/{name}"
            ),
            "REDIS_URL=redis://127.0.0.1:6379/0": (
                f"REDIS_URL={redis_server_url}\nAGENTCTL_REDIS_PREFIX={redis_prefix}"
            ),
        },
    )
    ports = {port: str(free_port()) for port in ("8001", "8002", "8300")}
    sandbox, replicas, deploy = (
        replace(block, {port: new for port, new in ports.items() if port in block})
        for block in (sandbox, replicas, deploy)
    )
    model = "; ".join(f"echo {k}={v} >> demo/.env" for k, v in model_server.env.items())
    deploy = replace(deploy, {"echo OPENAI_API_KEY=sk-… >> demo/.env": model})
    blocks = [install, database, settings, sandbox, replicas, deploy]
    steps = [f"echo '### {i}'\n{block}" for i, block in enumerate(blocks)]
    # Step 7 stops what the shell started.
    script = "\n".join(["set -eu", *steps, "echo '### stop'", "kill $(jobs -p)", "wait"])
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    env["PYTHONPATH"] = ":".join(p for p in sys.path if p.endswith("/src"))
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP USER IF EXISTS "{name}"')
    output = done.stdout + done.stderr
    logs = "".join(f"\n--- {log.name}\n{log.read_text()}" for log in sorted(tmp_path.glob("*.log")))
    assert done.returncode == 0, output + logs
    assert "PONG" in done.stdout
    assert done.stdout.count('{"ok":true}') == 2, output
    assert "Deployed revision 1 of agent demo (created, " in output
    assert '"content":"scripted reply to: hello"' in done.stdout, output
    assert "Traceback" not in output + logs
    assert (tmp_path / "serve.env").stat().st_mode & 0o077 == 0
