"""`agentctl init [NAME] [--force]`."""

from __future__ import annotations

from pathlib import Path

import click

from agentctl.bundle.dependencies import MODEL_PROVIDERS, model_provider
from agentctl.project.loader import DEFAULT_MODEL
from agentctl.project.scaffold import scaffold


@click.command()
@click.argument("name", required=False)
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init(name: str | None, force: bool) -> None:
    """Scaffold a new agent project in ./NAME (or in the current folder without NAME).

    Creates agent.toml, AGENTS.md, .env, mcp.json, skills/review/SKILL.md and a .gitignore.
    Existing files are never overwritten unless --force is given.
    """
    folder = Path(name) if name else Path.cwd()
    result = scaffold(folder, Path(name).name if name else None, force=force)
    where = f"{name.rstrip('/')}/" if name else "the current folder"
    click.echo(f'Created agent "{result.name}" in {where}:')
    for path in result.created:
        click.echo(f"  {path}")
    keys = ", ".join(MODEL_PROVIDERS[model_provider(DEFAULT_MODEL)].env)
    click.echo("\nNext:")
    if name:
        click.echo(f"  cd {name}")
    click.echo(f"  # set {keys} in .env (model {DEFAULT_MODEL}; change it in agent.toml)")
    click.echo("  agentctl dev                 # run it locally on http://127.0.0.1:2024")
    click.echo("  agentctl deploy --dry-run    # validate and bundle a revision")
