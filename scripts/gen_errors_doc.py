"""Regenerate docs/errors.md from the rule table and the broken-project corpus.

python scripts/gen_errors_doc.py          # rewrite the file
python scripts/gen_errors_doc.py --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentctl.project.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
DOC = ROOT / "docs" / "errors.md"

HEADER = """\
# Validation errors

`agentctl dev` and `agentctl deploy` validate the whole project before doing anything and report
**every** problem at once, one per line, as

    error: <file>: <key>: <what is wrong> — <how to fix it>

then exit with status 1. Files are named relative to the project root; keys are written
`[section].key` for TOML and `a.b.c` for JSON. The rule ids below are stable; each example is
the exact output for a broken project kept in `tests/corpus/<rule id>/`.

Missing environment variables are checked after validation (see `agentctl deploy` in
[cli.md](cli.md)) and reported as one line naming every variable and what needs it.
"""


def render() -> str:
    parts = [HEADER]
    for rule_id, rule in RULES.items():
        cases = sorted(p for p in CORPUS.iterdir() if p.name.split("--")[0] == rule_id)
        parts.append(f"## `{rule_id}`\n\n{_describe(rule.message)} — {_describe(rule.fix)}\n")
        for case in cases:
            example = (case / "expected.txt").read_text().rstrip("\n")
            parts.append(f"```text\n{example}\n```\n")
    return "\n".join(parts)


def _describe(template: str) -> str:
    first_line = template.split("\n")[0].replace("{{", "{").replace("}}", "}")
    return first_line.rstrip(":")


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if DOC.read_text() == text else 1)
    DOC.write_text(text)
