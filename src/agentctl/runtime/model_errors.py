"""A failed call to a model provider, said in one line: which provider, the URL it called,
what went wrong and the variable to check — from the exception a run failed with, whatever
the provider package wrapped it in.

Only a failure raised from a provider's package counts (its exception's module, or a frame
of its traceback): a tool's own connection error is not the model's. The key never appears:
the URL loses its query and user info, and what the provider said loses anything that looks
like a key.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Collection, Iterator
from typing import Any

from agentctl.bundle.dependencies import MODEL_PROVIDERS, model_provider
from agentctl.errors import ModelProviderError
from agentctl.runtime.credentials import OPTIONS

# The arguments of `credentials.OPTIONS` that name the provider's endpoint.
_ENDPOINT_ARGS = ("base_url", "api_base", "azure_endpoint")
# The top-level modules whose code calls each provider, beyond its langchain package.
_SDK_MODULES = {
    "openai": ("openai",),
    "azure_openai": ("openai",),
    "anthropic": ("anthropic",),
    "ollama": ("ollama",),
    "groq": ("groq",),
    "cohere": ("cohere",),
    "mistralai": ("mistralai",),
    "google_genai": ("google",),
    "google_vertexai": ("google", "vertexai"),
    "bedrock": ("botocore", "boto3"),
    "bedrock_converse": ("botocore", "boto3"),
    "anthropic_bedrock": ("botocore", "boto3", "anthropic"),
}
# What may be (part of) a key in a provider's message: `sk-...`, `gsk_...`, a masked
# `sk-****abcd`, a long token without the dashes or dots of a model's name.
_KEYLIKE = re.compile(
    r"\b(?:sk|pk|rk|gsk|xai|key|api)[-_]\S+|\bAIza\S+|\S*\*{3,}\S*|\b[A-Za-z0-9_]{32,}"
)
_DETAIL_CHARS = 200


def model_failure(exc: BaseException, models: Collection[str]) -> ModelProviderError | None:
    """What `exc` says about a call to the provider of one of `models` ("openai:gpt-4o"),
    or None when it did not come from one."""
    chain = list(_chain(exc))
    provider = _provider(chain, {model_provider(model) for model in models})
    if provider is None:
        return None
    status = next((s for e in chain if (s := _status(e)) is not None), None)
    if status is None and not any(_unreachable(e) for e in chain):
        return None  # e.g. a reply the package could not parse: not a provider error
    url = next((u for e in chain if (u := _url(e)) is not None), None)
    at = f"at {url}" if url else f"at its endpoint{_endpoint_hint(provider)}"
    if status is None:
        reason = "timed out" if any(_timed_out(e) for e in chain) else _refused_or(chain)
        return ModelProviderError(
            f"could not reach the {provider} model provider {at} ({reason}) — check "
            f"{_or(_endpoint_names(provider), 'the endpoint')} and that this machine can "
            "reach it"
        )
    detail = next((d for e in chain if (d := _detail(e))), "")
    said = f"{status}: {detail}" if detail else str(status)
    return ModelProviderError(
        f"the {provider} model provider {at} answered {said} — {_fix(provider, status)}"
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and its causes and contexts, each once."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend(e for e in (current.__context__, current.__cause__) if e is not None)


def _modules(exc: BaseException) -> set[str]:
    """The top-level packages that raised `exc` or that its traceback went through."""
    found = {type(exc).__module__.split(".")[0]}
    tb = exc.__traceback__
    while tb is not None:
        found.add(str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0])
        tb = tb.tb_next
    return found


def _provider(chain: list[BaseException], used: set[str]) -> str | None:
    """The provider (of those `used`) whose package the failure came from."""
    modules = set().union(*(_modules(e) for e in chain))
    for provider in sorted(used):
        needs = MODEL_PROVIDERS.get(provider)
        packages = {p.module for p in needs.packages} if needs is not None else set()
        if modules & (packages | set(_SDK_MODULES.get(provider, ()))):
            return provider
    return None


def _status(exc: BaseException) -> int | None:
    """The HTTP status a provider answered, as its package's error carries it."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and 400 <= status < 600:
            return status
    return None


def _unreachable(exc: BaseException) -> bool:
    name = type(exc).__name__
    return (
        isinstance(exc, ConnectionError | TimeoutError)
        or name.endswith(("ConnectError", "ConnectionError", "TimeoutError", "Timeout"))
        or "ConnectTimeout" in name
    )


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__


def _refused_or(chain: list[BaseException]) -> str:
    refused = any(
        isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED
        for e in chain
    )
    return "connection refused" if refused else "could not connect"


def _url(exc: BaseException) -> str | None:
    """The URL of the request `exc` failed, without its query or user info."""
    for holder in (exc, getattr(exc, "response", None)):
        try:
            request = getattr(holder, "request", None)
        except RuntimeError:  # httpx: an error not tied to a request
            continue
        url: Any = getattr(request, "url", None)
        scheme, host = getattr(url, "scheme", None), getattr(url, "host", None)
        if scheme and host:
            port = getattr(url, "port", None)
            netloc = f"[{host}]" if ":" in host else host
            return f"{scheme}://{netloc}{f':{port}' if port else ''}{getattr(url, 'path', '')}"
    return None


def _detail(exc: BaseException) -> str:
    """What the provider said, short and without anything that looks like a key."""
    body = getattr(exc, "body", None)
    said: Any = None
    if isinstance(body, dict):
        error = body.get("error", body)
        said = error.get("message") if isinstance(error, dict) else error
    if not isinstance(said, str) or not said:
        said = getattr(exc, "message", None) or getattr(exc, "error", None)
    if not isinstance(said, str) or not said:
        return ""
    text = _KEYLIKE.sub("***", " ".join(re.sub(r"^Error code: \d+ - ", "", said).split()))
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


def _fix(provider: str, status: int) -> str:
    endpoint = _or(_endpoint_names(provider), "the endpoint")
    if status in (401, 403):
        keys = _or(_key_names(provider), "the credentials")
        return f"check {keys}: the key is wrong, expired or lacks access"
    if status == 404:
        return f"check the model's name in agent.toml and {endpoint}"
    if status == 429:
        return "rate limited or out of quota: retry later, or raise the account's limits"
    if status >= 500:
        names = _endpoint_names(provider)
        elsewhere = f" (or set {names[0]} to another endpoint)" if names else ""
        return f"the provider's own failure: retry later{elsewhere}"
    return "the provider refused the request"


def _key_names(provider: str) -> list[str]:
    needs = MODEL_PROVIDERS.get(provider)
    names = list(needs.env) if needs is not None else []
    secret = [n for n in names if any(w in n for w in ("KEY", "TOKEN", "SECRET", "CREDENTIALS"))]
    return secret or names


def _endpoint_names(provider: str) -> list[str]:
    return [
        option.names[0] for option in OPTIONS.get(provider, ()) if option.kwarg in _ENDPOINT_ARGS
    ]


def _endpoint_hint(provider: str) -> str:
    names = _endpoint_names(provider)
    return f" ({names[0]})" if names else ""


def _or(names: list[str], otherwise: str) -> str:
    return " or ".join(names) if names else otherwise
