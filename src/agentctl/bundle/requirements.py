"""What a project requires, read off the dependency table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentctl.bundle.dependencies import (
    AUTH_PROVIDERS,
    MCP,
    MODEL_PROVIDERS,
    SANDBOX_PROVIDERS,
    TRACING,
    Needs,
    Package,
    model_provider,
)
from agentctl.project.envfile import is_set
from agentctl.project.mcp import MCP_FILE
from agentctl.project.model import Project


@dataclass(frozen=True)
class EnvNeed:
    name: str
    reason: str  # what needs it, e.g. "model openai:gpt-4.1"


@dataclass(frozen=True)
class Requirements:
    packages: tuple[Package, ...]
    env: tuple[EnvNeed, ...]
    # Variables read when set (a deploy sends them along with the required ones).
    optional_env: tuple[str, ...] = ()

    @property
    def env_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(need.name for need in self.env))

    def missing_env(self, env: Mapping[str, str]) -> list[EnvNeed]:
        return [need for need in self.env if not is_set(env, need.name)]

    def missing_packages(self) -> list[Package]:
        return [package for package in self.packages if not package.installed()]


def install_command(packages: list[Package]) -> str:
    return "pip install " + " ".join(f"'{p.requirement}'" for p in packages)


def requirements_of(project: Project) -> Requirements:
    needs: list[tuple[Needs, str]] = [
        (MODEL_PROVIDERS[model_provider(model)], f"model {model}") for model in project.models
    ]
    if any(f == MCP_FILE or f.endswith("/" + MCP_FILE) for f in project.files):
        needs.append((MCP, MCP_FILE))
    needs.append(
        (SANDBOX_PROVIDERS[project.sandbox.provider], f"sandbox {project.sandbox.provider}")
    )
    if project.auth:
        needs.append((AUTH_PROVIDERS[project.auth.provider], f"auth {project.auth.provider}"))
    packages = {p.requirement: p for n, _ in needs for p in n.packages}
    env = [EnvNeed(name, reason) for n, reason in needs for name in n.env]
    for server in project.all_mcp_servers:
        env += [EnvNeed(name, f"MCP server {server.name}") for name in server.env_names]
    unique = {need.name: need for need in reversed(env)}
    return Requirements(
        packages=tuple(packages[r] for r in sorted(packages)),
        env=tuple(sorted(unique.values(), key=lambda need: need.name)),
        optional_env=tuple(
            sorted({*TRACING, *(name for n, _ in needs for name in n.optional)} - set(unique))
        ),
    )
