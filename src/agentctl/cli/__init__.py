"""The `agentctl` command. Subcommands load lazily so `agentctl --help` stays instant."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from agentctl._version import __version__
from agentctl.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, AgentctlError, ConfigError

# name -> (module, attribute, one-line help). The help is here so --help imports nothing.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("agentctl.cli.init", "init", "Scaffold a new agent project."),
    "dev": (
        "agentctl.cli.dev",
        "dev",
        "Run the project locally, reloading it when a file changes.",
    ),
    "deploy": (
        "agentctl.cli.deploy",
        "deploy",
        "Bundle the project into a revision and deploy it.",
    ),
    "agents": (
        "agentctl.cli.agents",
        "agents",
        "List the agents of the platform.",
    ),
    "revisions": (
        "agentctl.cli.deploy",
        "revisions",
        "List the revisions of an agent deployed to the platform.",
    ),
    "rollback": (
        "agentctl.cli.deploy",
        "rollback",
        "Make an earlier revision of an agent active again.",
    ),
    "delete": (
        "agentctl.cli.agents",
        "delete",
        "Delete an agent from the platform, with everything it holds.",
    ),
    "serve": (
        "agentctl.cli.serve",
        "serve",
        "Run the production server that deploys go to.",
    ),
    "sandbox-server": (
        "agentctl.cli.sandbox_server",
        "sandbox_server",
        "Run the sandbox service the replicas share.",
    ),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short_help) for name, (_, _, short_help) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="agentctl")
def cli() -> None:
    """Deploy deep agents written as files: agent.toml, AGENTS.md, skills/, user/, subagents/,
    mcp.json and .env.

    \b
    agentctl init demo          scaffold a project in ./demo
    agentctl dev                run it locally on http://127.0.0.1:2024
    agentctl deploy --dry-run   validate and bundle it into a revision
    """


def color() -> bool | None:
    """False when `NO_COLOR` is set (no-color.org): no colour even on a terminal; None
    lets click decide (colour on a terminal only)."""
    return False if os.environ.get("NO_COLOR") else None


def report(error: AgentctlError) -> None:
    """Print an error the way every command does: `error: …`, one problem per line."""
    lines = [str(p) for p in error.problems] if isinstance(error, ConfigError) else [str(error)]
    for line in lines:
        first, *rest = line.split("\n")
        click.secho("error: ", fg="red", bold=True, err=True, nl=False, color=color())
        click.echo(first, err=True)
        for more in rest:
            click.echo("       " + more, err=True)
    if isinstance(error, ConfigError) and len(lines) > 1:
        click.echo(f"{len(lines)} problems found.", err=True)


def main(argv: list[str] | None = None) -> Any:
    """Entry point: user errors become `error: …` and an exit code, never a traceback."""
    try:
        return cli.main(args=argv, prog_name="agentctl", standalone_mode=False, color=color())
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except AgentctlError as exc:
        report(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        if os.environ.get("AGENTCTL_DEBUG"):
            raise
        click.secho("internal error: ", fg="red", bold=True, err=True, nl=False, color=color())
        click.echo(f"{type(exc).__name__}: {exc}", err=True)
        click.echo("This is a bug in agentctl; rerun with AGENTCTL_DEBUG=1 to see where.", err=True)
        sys.exit(EXIT_INTERNAL)
