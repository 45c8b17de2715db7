"""Lighthouse (npm, pinned in bench/lighthouse/) on the console's chat and thread views in
the system Chromium: accessibility and best practices at 95 or more. Performance, a timing,
is measured by bench/lighthouse.py (`make bench-lighthouse`), not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import chat_project
from tests.console.conftest import CHROMIUM_ARGS, ROOT, DevUrl
from tests.npm import npm_ci
from tests.server.conftest import sdk, user

pytestmark = pytest.mark.node

CATEGORIES = ("accessibility", "best-practices")
TURNS = [
    "hello there",
    "@say Here is **some** text, a list:\n\n- one\n- two\n\nand `code`.",
    "@say A longer answer " + "with many words " * 30,
]


def lighthouse(node: str, chromium: str, url: str, out: Path) -> dict[str, Any]:
    folder = npm_ci(ROOT / "bench" / "lighthouse")
    cli = folder / "lighthouse" / "cli" / "index.js"
    command = [node, str(cli), url, "--quiet", "--output=json", f"--output-path={out}",
               f"--only-categories={','.join(CATEGORIES)}", "--preset=desktop",
               f"--chrome-flags={' '.join(CHROMIUM_ARGS)}"]  # fmt: skip
    done = subprocess.run(
        command,
        env={**os.environ, "CHROME_PATH": chromium},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def failing(report: dict[str, Any], category: str) -> list[str]:
    refs = report["categories"][category]["auditRefs"]
    audits = (report["audits"][ref["id"]] for ref in refs if ref["weight"])
    return [
        f"{audit['id']}: {audit['title']}"
        for audit in audits
        if audit["score"] is not None and audit["score"] < 1
    ]


async def test_the_chat_and_thread_views_score_95_or_more(
    dev_url: DevUrl, node: str, chromium: str, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    client = sdk(url)
    thread = await client.threads.create()
    for text in TURNS:
        await client.runs.wait(thread["thread_id"], "chat", input=user(text))
    await client.aclose()
    for view in ("chat", "threads"):
        report = lighthouse(
            node, chromium, f"{url}/ui/#/{view}/{thread['thread_id']}", tmp_path / f"{view}.json"
        )
        for category in CATEGORIES:
            score = round(report["categories"][category]["score"] * 100)
            assert score >= 95, (view, category, score, failing(report, category))
