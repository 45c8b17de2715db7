"""What looking for `.env` values in the bundled files costs on a large project.

Writes a project of FILES files (markdown, Python, JSON and base64 text in skills, about
MB megabytes) and a `.env` of SECRETS keys plus a few values that are no secrets, then prints
how long `load_project` takes with that `.env` and without it (the difference is the scan),
and the scan alone (`secret_scan.find_leaks` over the files already read).

    python bench/secret_scan.py [--files 3000] [--mb 30] [--secrets 6]
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentctl.bundle.limits import RevisionLimits
from agentctl.project import load_project
from agentctl.project.secret_scan import find_leaks

SKILL = "---\nname: {0}\ndescription: Does {0} things\n---\n# {0}\nSteps.\n"
WORDS = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=3 + i % 8)) for i in range(4000)
]


def filler(rng: random.Random, size: int, kind: int) -> str:
    if kind == 3:  # a base64 blob, wrapped
        return base64.encodebytes(rng.randbytes(size * 3 // 4)).decode()
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        if kind == 1:
            word = f'{word} = "{rng.choice(WORDS)}{rng.randrange(1000)}"\n'
        elif kind == 2:
            word = f'"{word}": {rng.randrange(10**6)},'
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def write_project(root: Path, files: int, total_mb: float, secrets: int) -> dict[str, str]:
    rng = random.Random(7)
    (root / "agent.toml").write_text('[agent]\nname = "big"\nmodel = "openai:scripted"\n')
    (root / "AGENTS.md").write_text("You are a big agent.\n")
    per_file = int(total_mb * 1024 * 1024 / files)
    per_skill = 50
    for index in range(files):
        skill = root / "skills" / f"skill-{index // per_skill}"
        if index % per_skill == 0:
            skill.mkdir(parents=True)
            (skill / "SKILL.md").write_text(SKILL.format(skill.name))
            continue
        suffix = [".md", ".py", ".json", ".b64"][index % 4]
        (skill / f"file-{index}{suffix}").write_text(filler(rng, per_file, index % 4))
    env = {
        f"KEY_{i}": "sk-" + "".join(rng.choices(string.ascii_letters, k=40)) for i in range(secrets)
    }
    env |= {"PORT": "8080", "DEBUG": "true", "RELEASE": "2026-11-27", "MODEL": "scripted"}
    return env


def timed(action: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(files: int, total_mb: float, secrets: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "big"
        root.mkdir()
        env = write_project(root, files, total_mb, secrets)
        limits = RevisionLimits(max_revision_files=files + 100)
        without = timed(lambda: load_project(root, environ={}, limits=limits))
        (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        project = load_project(root, environ={}, limits=limits)
        with_env = timed(lambda: load_project(root, environ={}, limits=limits))
        scan = timed(lambda: find_leaks(project.contents, env))
        size = sum(len(data) for data in project.contents.values()) / 1024 / 1024
        print(f"{len(project.contents)} files, {size:.1f} MiB, {secrets} secrets")
        print(f"load_project without .env: {without * 1000:.0f} ms")
        print(f"load_project with .env:    {with_env * 1000:.0f} ms")
        print(f"the scan alone:            {scan * 1000:.0f} ms ({scan * 1000 / size:.1f} ms/MiB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--mb", type=float, default=30)
    parser.add_argument("--secrets", type=int, default=6)
    args = parser.parse_args()
    main(args.files, args.mb, args.secrets)
