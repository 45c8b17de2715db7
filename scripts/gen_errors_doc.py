"""Regenerate docs/errors.md: the error tree of `agentctl.errors` (each class, its parent, HTTP
status, exit code and when it is raised), then every validation rule with the broken-project
corpus' exact output.

python scripts/gen_errors_doc.py          # rewrite the file
python scripts/gen_errors_doc.py --check  # exit 1 when it is out of date

tests/test_validation_corpus.py fails while the file differs from this script's output.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from agentctl import errors
from agentctl.project.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
DOC = ROOT / "docs" / "errors.md"

HEADER = """\
# Errors

Every error agentctl raises on purpose is a class of one tree, in
[`src/agentctl/errors.py`](../src/agentctl/errors.py). Each class carries the HTTP status the
server answers with, as `{"detail": "<message>"}` (the LangGraph clients read `detail`), and
the exit code of the CLI, which prints `error: <message>` on standard error (never a
traceback). The message says what is wrong and, for a user's mistake, how to fix it.

- `UserError` and below: something the user can fix: the project, a setting, the request.
  `RequestError` and below are requests the server refuses; MCP answers them as a failed tool
  call, A2A as a failed task, the thread protocol as an error of the command.
- `AuthError`: the request's token does not prove who the caller is.
- `RuntimeFailure` and below: the system failed, not the user.

This page is generated from `src/agentctl/errors.py` by `scripts/gen_errors_doc.py`.
"""

OTHER_EXITS = f"""\
The other exit codes of the CLI:

- 0: success.
- 2: a command line it cannot parse (an unknown option, a missing argument).
- {errors.EXIT_INTERRUPTED}: interrupted (Ctrl-C), or an answer to a prompt aborted.
- {errors.EXIT_INTERNAL}: an unexpected exception, a bug in agentctl; it prints `internal error: …`
  (`AGENTCTL_DEBUG=1` shows the traceback).
"""


VALIDATION = """\
## Validation errors

`agentctl dev` and `agentctl deploy` validate the whole project before doing anything and report
**every** problem at once (a `ConfigError`), one per line, as

    error: <file>: <key>: <what is wrong> — <how to fix it>

then exit with status 1. Files are named relative to the project root; keys are written
`[section].key` for TOML and `a.b.c` for JSON. The rule ids below are stable; each example is
the exact output for a broken project kept in `tests/corpus/<rule id>/`.

Missing environment variables are checked after validation (see `agentctl deploy` in
[cli.md](cli.md)) and reported as one line naming every variable and what needs it (a
`MissingEnvError`).
"""


def render() -> str:
    return "\n".join([HEADER, _tree(), OTHER_EXITS, _outside(), VALIDATION, *_rules()])


def tree_classes() -> list[tuple[int, type[errors.AgentctlError]]]:
    """Every class of the tree with its depth, parents before children, in source order."""
    ordered: list[tuple[int, type[errors.AgentctlError]]] = []

    def visit(cls: type[errors.AgentctlError], depth: int) -> None:
        ordered.append((depth, cls))
        for child in cls.__subclasses__():
            visit(child, depth + 1)

    visit(errors.AgentctlError, 0)
    return ordered


def _tree() -> str:
    rows = [
        "## The error tree",
        "",
        "| error | parent | HTTP status | exit code | raised when |",
        "|---|---|---|---|---|",
    ]
    for depth, cls in tree_classes():
        name = "&nbsp;&nbsp;" * depth + f"`{cls.__name__}`"
        parent = f"`{cls.__bases__[0].__name__}`"
        rows.append(f"| {name} | {parent} | {cls.status} | {cls.exit_code} | {_doc(cls)} |")
    return "\n".join(rows) + "\n"


def _outside() -> str:
    lines = ["These exception classes of agentctl stay outside the tree on purpose:", ""]
    for qualified, why in errors.OUTSIDE_THE_TREE.items():
        lines.append(f"- `{qualified.rsplit('.', 1)[1]}` (`{qualified}`): {why}.")
    return "\n".join(lines) + "\n"


def _doc(cls: type) -> str:
    """The first paragraph of the class's docstring, on one line, fit for a table cell."""
    paragraph = (inspect.getdoc(cls) or "").split("\n\n")[0]
    return " ".join(paragraph.split()).replace("|", "\\|")


def _rules() -> list[str]:
    parts = []
    for rule_id, rule in RULES.items():
        cases = sorted(p for p in CORPUS.iterdir() if p.name.split("--")[0] == rule_id)
        parts.append(f"### `{rule_id}`\n\n{_describe(rule.message)} — {_describe(rule.fix)}\n")
        for case in cases:
            example = (case / "expected.txt").read_text().rstrip("\n")
            parts.append(f"```text\n{example}\n```\n")
    return parts


def _describe(template: str) -> str:
    first_line = template.split("\n")[0].replace("{{", "{").replace("}}", "}")
    return first_line.rstrip(":")


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if DOC.read_text() == text else 1)
    DOC.write_text(text)
