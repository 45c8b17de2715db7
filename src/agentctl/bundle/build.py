"""The steps `dev` and `deploy` share: check the environment, bundle, store the revision."""

from __future__ import annotations

from pathlib import Path

from agentctl.bundle.dependencies import PLATFORM_API_KEY, PLATFORM_URL
from agentctl.bundle.requirements import Requirements
from agentctl.bundle.revision import Revision
from agentctl.errors import MissingEnvError
from agentctl.project.envfile import is_set
from agentctl.project.model import Project

STATE_DIR = ".agentctl"  # inside the project; ignores itself in git
BUILD_DIR = f"{STATE_DIR}/build"
# What a real deploy needs beyond the project's own variables, and why.
DEPLOY_NEEDS = {
    PLATFORM_API_KEY: "deploy",
    PLATFORM_URL: "deploy: the URL of your agentctl serve",
}


def check_env(project: Project, requirements: Requirements, *, platform_key: bool) -> None:
    """Fail fast, naming every required variable that is not set.

    `platform_key` adds PLATFORM_API_KEY and PLATFORM_URL, which a real deploy needs.
    """
    missing = {need.name: need.reason for need in requirements.missing_env(project.env)}
    if platform_key:
        for name, reason in DEPLOY_NEEDS.items():
            if not is_set(project.env, name):
                missing.setdefault(name, reason)
    if missing:
        raise MissingEnvError(missing)


def state_dir(project: Project) -> Path:
    """The project's `.agentctl/` folder, created with a .gitignore that ignores all of it."""
    folder = project.root / STATE_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Build output and local data of agentctl.\n*\n")
    return folder


def store_revision(project: Project, revision: Revision) -> Path:
    """Write the revision under `.agentctl/build/<short id>/`; returns that folder."""
    state_dir(project)
    return revision.write(project.root / BUILD_DIR)
