"""Chat models from `provider:model`, with load-time errors that say what to install or set."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentctl.bundle.dependencies import MODEL_PROVIDERS, model_provider
from agentctl.bundle.requirements import install_command
from agentctl.errors import MissingEnvError, MissingPackageError
from agentctl.project.envfile import is_set
from agentctl.runtime.credentials import model_kwargs
from agentctl.runtime.metering import Unmetered


def check_model(model: str, env: Mapping[str, str]) -> None:
    """Raise the error a user can act on when `model` cannot be created here with the
    variables of `env` (the runtime's own: never the process environment)."""
    needs = MODEL_PROVIDERS[model_provider(model)]
    missing = [p for p in needs.packages if not p.installed()]
    if missing:
        raise MissingPackageError(
            f"model {model} needs the package {missing[0].name}, which is not installed — "
            f"run: {install_command(missing)}"
        )
    unset = {name: f"model {model}" for name in needs.env if not is_set(env, name)}
    if unset:
        raise MissingEnvError(unset)


def create_models(models: Iterable[str], env: Mapping[str, str]) -> dict[str, Any]:
    """One chat model per distinct `provider:model`, each checked before it is created and
    given its key and endpoint from `env` (see `credentials`), reporting its usage when it
    streams."""
    from langchain.chat_models import init_chat_model

    created: dict[str, Any] = {}
    for model in models:
        if model not in created:
            check_model(model, env)
            chat = init_chat_model(model, **model_kwargs(model, env))
            # A run's tokens are counted, streamed or not: langchain-openai's models (and the
            # providers built on them) ask for usage when streaming (`stream_options.
            # include_usage`) only from OpenAI's own endpoint, and one is always given here.
            # Anthropic's and Ollama's report it anyway.
            if "stream_usage" in type(chat).model_fields:
                chat.stream_usage = True
            # The calls no agent's model step meters (a middleware's own) are metered too.
            chat.callbacks = [*(chat.callbacks or []), Unmetered(model)]
            created[model] = chat
    return created
