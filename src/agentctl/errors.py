"""Every error agentctl raises on purpose.

The tree separates a user's mistakes (fixable by editing the project or the request)
from failures of the running system::

    AgentctlError                 exit_code 1, status 500
    ├── UserError                 something the user can fix; the message says how
    │   ├── ConfigError           a project that fails validation (carries every Problem)
    │   ├── MissingEnvError       required environment variables are not set
    │   └── ProjectExistsError    `init` would overwrite files (without --force)
    ├── AuthError                 status 401: a missing, invalid, expired or forged token
    └── RuntimeFailure            the system failed; not the user's fault
        └── AuthUnavailable       status 503: the identity provider could not say yes or no

Each class carries the HTTP `status` the server answers with and the CLI `exit_code`.
The CLI prints `error: <message>` and exits with `exit_code`; never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a project, located by file and key."""

    file: str
    key: str
    message: str
    fix: str
    rule: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.key}: " if self.key else f"{self.file}: "
        return f"{where}{self.message} — {self.fix}"


class AgentctlError(Exception):
    """Base of every error agentctl raises on purpose."""

    exit_code = 1
    status = 500


class UserError(AgentctlError):
    """A mistake the user can fix; the message says how."""

    status = 400


class ConfigError(UserError):
    """The project is invalid. Holds every problem found, not just the first."""

    status = 422

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class MissingEnvError(UserError):
    """Environment variables the project needs are not set."""

    def __init__(self, missing: Mapping[str, str]) -> None:
        """`missing` maps each variable name to what needs it."""
        self.names = sorted(missing)
        listed = ", ".join(f"{name} (for {missing[name]})" for name in self.names)
        super().__init__(
            f"missing environment variables: {listed} — set them in the project's .env "
            "or in the environment"
        )


class ProjectExistsError(UserError):
    """`agentctl init` found files it would overwrite."""

    def __init__(self, existing: Sequence[str]) -> None:
        self.existing = list(existing)
        super().__init__(
            "these files already exist: "
            + ", ".join(self.existing)
            + " — pass --force to overwrite them, or choose another folder"
        )


class AuthError(AgentctlError):
    """The request's token does not prove who the caller is: missing, malformed, expired,
    revoked or forged. The message says what is wrong and never echoes the token."""

    status = 401


class RuntimeFailure(AgentctlError):
    """The system failed in a way the user did not cause."""


class AuthUnavailable(RuntimeFailure):
    """The identity provider did not answer, answered nonsense, or refused the server's own
    credentials. The token may be fine; a request is refused (never let through) until the
    provider answers again."""

    status = 503


__all__ = [
    "AgentctlError",
    "AuthError",
    "AuthUnavailable",
    "ConfigError",
    "MissingEnvError",
    "Problem",
    "ProjectExistsError",
    "RuntimeFailure",
    "UserError",
]
