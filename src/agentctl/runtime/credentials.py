"""What each model provider's chat model is given from a runtime's variables: its key, its
endpoint, its region. They are passed to the constructor, never put in the process
environment, so two runtimes of one process use their own keys.

A variable a provider reads when set but that has a known default (an endpoint) is always
passed, with the default when the runtime lacks it: the provider package would otherwise
fall back to the process environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentctl.bundle.dependencies import model_provider
from agentctl.errors import UserError


@dataclass(frozen=True)
class Option:
    """One constructor argument: the value of the first of `names` that is set, else
    `default` (None: the argument is left out)."""

    kwarg: str
    names: tuple[str, ...]
    default: str | None = None
    convert: Callable[[str], Any] | None = None  # e.g. a file path into credentials


def _option(kwarg: str, *names: str, default: str | None = None) -> Option:
    return Option(kwarg, names, default)


def _google_credentials(path: str) -> Any:
    """The service account of a key file: google-auth reads the file named by
    GOOGLE_APPLICATION_CREDENTIALS from the process environment otherwise."""
    from google.oauth2 import service_account

    scopes = ["https://www.googleapis.com/auth/cloud-platform"]
    try:
        return service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
            path, scopes=scopes
        )
    except (OSError, ValueError) as exc:
        raise UserError(
            f"GOOGLE_APPLICATION_CREDENTIALS: {path} is not a readable service account key "
            f"file ({type(exc).__name__}) — name the JSON key file of a service account"
        ) from None


_AWS = (
    _option("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
    _option("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
    _option("aws_session_token", "AWS_SESSION_TOKEN"),
    _option("region_name", "AWS_DEFAULT_REGION"),
)

OPTIONS: dict[str, tuple[Option, ...]] = {
    "openai": (
        _option("api_key", "OPENAI_API_KEY"),
        _option("base_url", "OPENAI_BASE_URL", default="https://api.openai.com/v1"),
    ),
    "azure_openai": (
        _option("api_key", "AZURE_OPENAI_API_KEY"),
        _option("azure_endpoint", "AZURE_OPENAI_ENDPOINT"),
        _option("api_version", "OPENAI_API_VERSION"),
    ),
    "anthropic": (
        _option("api_key", "ANTHROPIC_API_KEY"),
        _option("base_url", "ANTHROPIC_BASE_URL", default="https://api.anthropic.com"),
    ),
    "google_genai": (_option("api_key", "GOOGLE_API_KEY"),),
    "google_vertexai": (
        Option("credentials", ("GOOGLE_APPLICATION_CREDENTIALS",), convert=_google_credentials),
    ),
    "bedrock": _AWS,
    "bedrock_converse": _AWS,
    "anthropic_bedrock": _AWS,
    "mistralai": (_option("api_key", "MISTRAL_API_KEY"),),
    "groq": (_option("api_key", "GROQ_API_KEY"),),
    "fireworks": (_option("api_key", "FIREWORKS_API_KEY"),),
    "together": (_option("api_key", "TOGETHER_API_KEY"),),
    "cohere": (_option("cohere_api_key", "COHERE_API_KEY"),),
    "ollama": (
        _option("base_url", "OLLAMA_BASE_URL", "OLLAMA_HOST", default="http://127.0.0.1:11434"),
    ),
    "deepseek": (
        _option("api_key", "DEEPSEEK_API_KEY"),
        _option("api_base", "DEEPSEEK_API_BASE", default="https://api.deepseek.com/v1"),
    ),
    "xai": (_option("api_key", "XAI_API_KEY"),),
    "perplexity": (_option("api_key", "PPLX_API_KEY"),),
    "huggingface": (_option("huggingfacehub_api_token", "HUGGINGFACEHUB_API_TOKEN"),),
}


def model_kwargs(model: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The constructor arguments of `model`'s chat model, from `env`."""
    kwargs: dict[str, Any] = {}
    for option in OPTIONS[model_provider(model)]:
        value = next((env[name] for name in option.names if env.get(name)), option.default)
        if value is not None:
            kwargs[option.kwarg] = option.convert(value) if option.convert else value
    return kwargs


def variables(provider: str) -> set[str]:
    """Every variable the chat model of `provider` is given."""
    return {name for option in OPTIONS[provider] for name in option.names}
