"""Chat models from `provider:model`, with load-time errors that say what to install or set."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from agentctl.bundle.dependencies import MODEL_PROVIDERS, model_provider
from agentctl.bundle.requirements import install_command
from agentctl.errors import MissingEnvError, MissingPackageError
from agentctl.project.envfile import is_set


def check_model(model: str) -> None:
    """Raise the error a user can act on when `model` cannot be created here.

    Provider packages read their keys from the process environment, where `load_agent` has
    put the project's variables.
    """
    needs = MODEL_PROVIDERS[model_provider(model)]
    missing = [p for p in needs.packages if not p.installed()]
    if missing:
        raise MissingPackageError(
            f"model {model} needs the package {missing[0].name}, which is not installed — "
            f"run: {install_command(missing)}"
        )
    unset = {name: f"model {model}" for name in needs.env if not is_set(os.environ, name)}
    if unset:
        raise MissingEnvError(unset)


def create_models(models: Iterable[str]) -> dict[str, Any]:
    """One chat model per distinct `provider:model`, each checked before it is created."""
    from langchain.chat_models import init_chat_model

    created: dict[str, Any] = {}
    for model in models:
        if model not in created:
            check_model(model)
            created[model] = init_chat_model(model)
    return created
