"""`agentctl agents` lists the agents of the platform at PLATFORM_URL; `agentctl delete NAME`
deletes one, with everything it holds, once confirmed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from agentctl.cli.target import config_option, platform_of, when
from agentctl.errors import UserError

# What goes with an agent when it is deleted, as `delete` says before asking.
DELETED_WITH_IT = (
    "its revisions, secrets, assistants, threads, runs, crons, store items and memory, "
    "users' connections to MCP servers, and sandboxes"
)


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the agents as JSON.")
def agents(config: Path, as_json: bool) -> None:
    """List the agents of the platform at PLATFORM_URL."""
    listed = sorted(platform_of(config).agents(), key=lambda item: item["name"])
    if as_json:
        click.echo(json.dumps(listed, indent=2))
        return
    if not listed:
        click.echo("no agent deployed yet — run agentctl deploy")
        return
    width = max(len("agent"), *(len(item["name"]) for item in listed))
    click.echo(f"{'agent':<{width}}  {'revision':>8}  {'deployed at':<23}  {'runs':>4}  url")
    for item in listed:
        number = item["active_revision"]
        deployed = when(item["deployed_at"]) if item["deployed_at"] else "-"
        click.echo(
            f"{item['name']:<{width}}  {'-' if number is None else number:>8}  "
            f"{deployed:<23}  {item['runs_in_flight']:>4}  {item['url']}"
        )


@click.command()
@config_option
@click.argument("name")
@click.option("--yes", is_flag=True, help="Delete without asking to type the agent's name.")
def delete(config: Path, name: str, yes: bool) -> None:
    """Delete agent NAME from the platform, with everything it holds."""
    platform = platform_of(config)
    found = next((item for item in platform.agents() if item["name"] == name), None)
    if found is None:
        raise platform.unknown_agent(name)
    in_flight = found["runs_in_flight"]
    click.echo(
        f"Deleting agent {name} ({found['url']}) deletes {DELETED_WITH_IT}"
        + (f"; it has {in_flight} runs in flight" if in_flight else "")
        + ". It cannot be undone.",
        err=True,
    )
    if not yes:
        typed = click.prompt(
            "Type the agent's name to delete it", err=True, default="", show_default=False
        )
        if typed != name:
            raise UserError(f"{typed!r} is not {name!r}: nothing deleted — type the agent's name")
    deleted = platform.delete(name)
    click.echo(click.style(f"Deleted agent {name}", fg="green", bold=True))
    summarize_deleted(deleted)
    pending = (deleted.get("sandboxes") or {}).get("pending")
    if pending:
        click.echo(
            f"warning: some sandboxes of {name} are not removed yet: {pending} — the platform "
            "removes them once the sandbox service answers (its log says when); the agent "
            "deployed again under this name never gets them",
            err=True,
        )


def summarize_deleted(deleted: dict[str, Any]) -> None:
    """What the platform says it deleted, one `  what  how much` line each (a group, such
    as the counts of records, flattened into its lines; the sandboxes in one line)."""
    rows: list[tuple[str, Any]] = []
    for key, value in deleted.items():
        if key == "sandboxes" and isinstance(value, dict):
            rows.append((key, sandboxes_removed(value)))
        elif isinstance(value, dict):
            rows.extend(value.items())
        elif key not in ("agent", "name") and value is not None:
            rows.append((key, value))
    width = max((len(key) for key, _ in rows), default=0)
    for key, value in rows:
        shown = value if isinstance(value, str | int | float) else json.dumps(value)
        click.echo(f"  {key.replace('_', ' '):<{width}}  {shown}")


def sandboxes_removed(sandboxes: dict[str, Any]) -> str:
    """`2 removed (a.x, t.x.y)`, and `, cleanup pending` when some are left to remove."""
    removed = list(sandboxes.get("removed") or [])
    line = f"{len(removed)} removed" + (f" ({', '.join(removed)})" if removed else "")
    return line + (", cleanup pending" if sandboxes.get("pending") else "")
