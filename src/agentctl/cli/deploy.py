"""`agentctl deploy [--config PATH] [--dry-run]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from agentctl.bundle.build import check_env, store_revision
from agentctl.bundle.dependencies import PLATFORM_API_KEY
from agentctl.bundle.requirements import install_command, requirements_of
from agentctl.bundle.revision import ARCHIVE_FILE, Revision, build_revision
from agentctl.errors import UserError
from agentctl.project import load_project
from agentctl.project.envfile import is_set

config_option = click.option(
    "--config",
    "config",
    default="agent.toml",
    show_default=True,
    type=click.Path(path_type=Path),
    help="The project's agent.toml.",
)


@click.command()
@config_option
@click.option("--dry-run", is_flag=True, help="Validate and bundle only; deploy nothing.")
def deploy(config: Path, dry_run: bool) -> None:
    """Bundle the project into a new immutable revision and deploy it.

    Every run fully rebuilds the revision. With --dry-run the revision is written to the
    project's .agentctl/build/ folder and summarized, and nothing is deployed.
    """
    step("Validating", str(config))
    project = load_project(config)
    requirements = requirements_of(project)
    check_env(project, requirements, platform_key=not dry_run)
    if not is_set(project.env, PLATFORM_API_KEY):
        warn(f"{PLATFORM_API_KEY} is not set: a real deploy needs it")
    missing = requirements.missing_packages()
    if missing:
        warn(f"packages the revision needs are not installed here: {install_command(missing)}")
    step("Bundling", f"{len(project.files)} files")
    revision = build_revision(project)
    folder = store_revision(project, revision)
    summarize(revision, folder)
    if not dry_run:
        raise UserError(
            "no platform is configured to deploy to — the revision above was built; "
            "run `agentctl deploy --dry-run` to only build it"
        )


def step(what: str, detail: str) -> None:
    click.echo(click.style(f"{what}… ", bold=True) + detail, err=True)


def warn(message: str) -> None:
    click.echo(click.style("warning: ", fg="yellow", bold=True) + message, err=True)


def summarize(revision: Revision, folder: Path) -> None:
    """A readable summary of what the revision holds."""
    m = revision.manifest
    rows = [
        ("agent", m["agent"]["name"]),
        ("revision", f"{revision.short_id}  (sha256 {revision.id})"),
        ("model", m["agent"]["model"]),
        ("skills", ", ".join(s["name"] for s in m["skills"]) or "none"),
        ("user memory", m["user_template"] or "none (no user/ folder)"),
        ("subagents", _subagents(m) or "none"),
        ("mcp servers", _servers(m["mcp_servers"]) or "none"),
        ("sandbox", m["sandbox"]["provider"]),
        ("auth", m["auth"]["provider"] if m["auth"] else "none"),
        ("packages", ", ".join(m["packages"]) or "none"),
        ("env", ", ".join(m["env"]) or "none"),
        ("path", str(folder / ARCHIVE_FILE)),
    ]
    click.echo(click.style(f"Revision {revision.short_id} built", fg="green", bold=True))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        lines = value.split("\n")
        click.echo(f"  {label:<{width}}  {lines[0]}")
        for more in lines[1:]:
            click.echo(f"  {'':<{width}}  {more}")


def _servers(servers: list[dict[str, str]]) -> str:
    return ", ".join(f"{s['name']} ({s['transport']})" for s in servers)


def _subagents(manifest: dict[str, Any]) -> str:
    lines = []
    for sub in manifest["subagents"]:
        model = sub["model"] + (" inherited" if sub["model_inherited"] else "")
        skills = ", ".join(s["name"] for s in sub["skills"]) or "no skills"
        mcp = _servers(sub["mcp_servers"])
        lines.append(f"{sub['name']}: {model}; {skills}" + (f"; mcp {mcp}" if mcp else ""))
    return "\n".join(lines)
