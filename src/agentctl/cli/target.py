"""What a platform command addresses: the platform (PLATFORM_URL and PLATFORM_API_KEY, from
the environment or the project's .env) and, on it, the agent."""

from __future__ import annotations

import os
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import click

from agentctl.bundle.dependencies import PLATFORM_API_KEY
from agentctl.errors import MissingEnvError, UserError
from agentctl.platform.client import PLATFORM_URL, PlatformClient
from agentctl.project.envfile import is_set, read_env_file

config_option = click.option(
    "--config",
    "config",
    default="agent.toml",
    show_default=True,
    type=click.Path(path_type=Path),
    help="The project's agent.toml.",
)

agent_option = click.option(
    "--agent",
    "agent",
    default=None,
    metavar="NAME",
    help="The agent (default: the project's, else the platform's only one).",
)


def platform_of(config: Path) -> PlatformClient:
    """The platform named by PLATFORM_URL and PLATFORM_API_KEY, from the environment or the
    project's .env."""
    dotenv, _ = read_env_file(_root(config))
    env = {**dotenv, **os.environ}
    unset = [name for name in (PLATFORM_URL, PLATFORM_API_KEY) if not is_set(env, name)]
    if unset:
        raise MissingEnvError({name: "reaching the platform" for name in unset})
    return PlatformClient(env[PLATFORM_URL].rstrip("/"), env[PLATFORM_API_KEY])


def agent_of(platform: PlatformClient, config: Path, agent: str | None) -> str:
    """The agent a command means: `--agent`, else the `[agent].name` of the project's
    agent.toml, else the platform's only agent."""
    if agent:
        return agent
    named = project_agent(config)
    if named:
        return named
    names: list[str] = sorted(item["name"] for item in platform.agents())
    if len(names) == 1:
        return names[0]
    if not names:
        raise UserError(f"the platform at {platform.url} hosts no agent yet — run agentctl deploy")
    raise UserError(
        f"the platform at {platform.url} hosts {len(names)} agents ({', '.join(names)}) "
        "— choose one with --agent NAME, or run this in its project's folder"
    )


def project_agent(config: Path) -> str | None:
    """The `[agent].name` of the project's agent.toml; None without a readable one."""
    path = config if config.suffix == ".toml" else config / "agent.toml"
    try:
        name = tomllib.loads(path.read_text()).get("agent", {}).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return None
    return name if isinstance(name, str) and name else None


def when(timestamp: str) -> str:
    """An ISO timestamp from the platform as `2026-11-24 17:38:31 UTC` (whole seconds)."""
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return timestamp
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _root(config: Path) -> Path:
    return config.parent if config.suffix == ".toml" else config
