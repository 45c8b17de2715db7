"""Lighthouse (npm, pinned in bench/lighthouse/) on the web console's chat and thread views,
against `agentctl dev` on a small project answered by the scripted model, in the system's
headless Chromium: the accessibility, best-practices and performance scores, for Lighthouse's
mobile (a slow phone simulated) and desktop presets, and the audits that cost points.

    python bench/lighthouse.py [--presets mobile desktop] [--views chat threads]

tests/console/test_lighthouse.py asserts accessibility and best practices (not timing);
performance depends on the machine's load, so it is measured here only."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from common import QUIET_ENV, child
from langgraph_sdk import get_client

from agentctl.testing import ScriptedModelServer
from console import CHROMIUM, ready_url

HERE = Path(__file__).parent / "lighthouse"
CATEGORIES = ("accessibility", "best-practices", "performance")
FLAGS = " ".join(
    ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
     "--disable-component-update", "--disable-sync", "--no-first-run"]
)  # fmt: skip
TURNS = [
    "hello there",
    "@say Here is **some** text, a list:\n\n- one\n- two\n\nand `code`.",
    "@say A longer answer " + "with many words " * 30,
]


def installed() -> Path:
    """bench/lighthouse/node_modules/.bin/lighthouse, installed by `npm ci` if missing."""
    binary = HERE / "node_modules" / ".bin" / "lighthouse"
    if not binary.exists():
        npm = shutil.which("npm") or sys.exit("Lighthouse needs Node.js 20+ and npm")
        ci = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(ci, cwd=HERE, check=True)
    return binary


def lighthouse(url: str, preset: str, out: Path) -> dict[str, Any]:
    """Lighthouse's report on `url` (`preset` mobile or desktop)."""
    command = [str(installed()), url, "--quiet", "--output=json", f"--output-path={out}",
               f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={FLAGS}"]  # fmt: skip
    if preset == "desktop":
        command.append("--preset=desktop")
    env = {**os.environ, "CHROME_PATH": os.environ.get("CHROMIUM", CHROMIUM)}
    subprocess.run(command, check=True, env=env, timeout=300, capture_output=True)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def scores(report: dict[str, Any]) -> dict[str, int]:
    return {key: round(c["score"] * 100) for key, c in report["categories"].items()}


def costly(report: dict[str, Any]) -> list[str]:
    """The weighted audits that did not pass, with what they found."""
    found = []
    for key, category in report["categories"].items():
        for ref in category["auditRefs"]:
            audit = report["audits"][ref["id"]]
            if ref["weight"] and audit["score"] is not None and audit["score"] < 1:
                items = (audit.get("details") or {}).get("items") or []
                nodes = [i["node"].get("selector", "") for i in items if "node" in i]
                shown = audit.get("displayValue", "") or ", ".join(nodes[:3])
                found.append(f"{key}: {ref['id']} {audit['score']:.2f} {shown}")
    return found


async def conversation(url: str) -> str:
    """A thread of a few turns, for the views to show."""
    client = get_client(url=url, api_key=None)
    thread = await client.threads.create()
    for text in TURNS:
        message = {"messages": [{"role": "user", "content": text}]}
        await client.runs.wait(thread["thread_id"], "bench", input=message)
    await client.aclose()
    return str(thread["thread_id"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=["mobile", "desktop"])
    parser.add_argument("--views", nargs="+", default=["chat", "threads"])
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as model:
        project = Path(tmp) / "lighthouse-bench"
        project.mkdir()
        (project / "agent.toml").write_text('[agent]\nname = "bench"\nmodel = "openai:scripted"\n')
        (project / "AGENTS.md").write_text("You chat.\n")
        env = {**os.environ, **QUIET_ENV, **model.env}
        log = Path(tmp) / "dev.log"
        command = [sys.executable, "-m", "agentctl", "dev", "--config", str(project / "agent.toml"),
                   "--port", "0"]  # fmt: skip
        with child(command, log, env=env):
            url = await ready_url(log)
            thread_id = await conversation(url)
            version = json.loads((HERE / "package.json").read_text())["dependencies"]["lighthouse"]
            print(f"agentctl dev at {url}, Lighthouse {version}, Chromium {CHROMIUM}")
            for preset in options.presets:
                for view in options.views:
                    report = await asyncio.to_thread(
                        lighthouse, f"{url}/ui/#/{view}/{thread_id}", preset, Path(tmp) / "r.json"
                    )
                    shown = "  ".join(f"{k} {v:3d}" for k, v in scores(report).items())
                    print(f"{preset:<8} {view:<8} {shown}")
                    for line in costly(report):
                        print(f"    {line}")


if __name__ == "__main__":
    asyncio.run(main())
