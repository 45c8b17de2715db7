"""Code sandboxes for agents: `[sandbox]` of agent.toml.

`platform_sandbox` runs on our own service (`service`, isolated by `isolation`, shared by
replicas over `http`/`client`); `sandbox_a`, `sandbox_b` and `sandbox_c` on the partners'
(`partners`). Either way the agent gets a `ScopedSandbox` (`base`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentctl.errors import UserError
from agentctl.project.model import Project
from agentctl.sandbox.base import SandboxKey, SandboxPool, ScopedSandbox
from agentctl.sandbox.service import Sandboxes, SandboxService, SandboxSpec
from agentctl.settings import SandboxSettings

__all__ = [
    "SandboxKey",
    "SandboxPool",
    "SandboxService",
    "SandboxSpec",
    "Sandboxes",
    "ScopedSandbox",
    "open_sandboxes",
    "sandbox_pool",
    "sandbox_spec",
]


def open_sandboxes(settings: SandboxSettings, data_dir: Path, api_key: str | None) -> Sandboxes:
    """The platform sandbox service: the shared one at `AGENTCTL_SANDBOX_URL`, else one in
    this process keeping its files in `AGENTCTL_SANDBOX_DIR` (default `data_dir/sandboxes`).
    Nothing starts until a sandbox is used."""
    if settings.url:
        from agentctl.sandbox.client import SandboxClient

        if not api_key:
            raise UserError("AGENTCTL_SANDBOX_URL needs PLATFORM_API_KEY, the key it accepts")
        return SandboxClient(settings.url, api_key, timeout=settings.timeout_seconds)
    return SandboxService(settings, Path(settings.dir) if settings.dir else data_dir / "sandboxes")


def sandbox_spec(project: Project) -> SandboxSpec:
    """The image, template and skills (paths under `skills/`) of the project's sandbox."""
    skills = {
        path.removeprefix("skills/"): project.contents[path]
        for skill in project.skills
        for path in skill.files
    }
    return SandboxSpec(project.sandbox.image, project.sandbox.template, skills)


async def sandbox_pool(
    project: Project, sandboxes: Sandboxes | None, env: Mapping[str, str], store: Any
) -> SandboxPool:
    """The provider of the project's sandboxes, checked: it can run them here."""
    provider = project.sandbox.provider
    spec = sandbox_spec(project)
    if provider == "platform_sandbox":
        if sandboxes is None:
            raise UserError("the platform sandbox is not available in this server")
        from agentctl.sandbox.platform import PlatformPool

        await sandboxes.check(spec)
        return PlatformPool(sandboxes, spec)
    from agentctl.sandbox.partners import partner_pool

    return partner_pool(provider, project.sandbox, env, store, spec.skills)
