"""A model provider's failure said in one line (`runtime/model_errors.py`), for the chat
models agentctl creates, on each wire of the scripted model server: the provider, the URL
called, what it answered, the variable to check — never the key."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentctl.runtime.model_errors import model_failure
from agentctl.runtime.models import create_models
from agentctl.testing import PROVIDERS, ScriptedModelServer
from agentctl.testing.services import free_port

KEY = "sk-test-4d1e8a0c7f-must-never-leak"
# The variable naming each provider's endpoint, and the path its package calls under it.
ENDPOINT = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_BASE_URL",
}
# The provider packages retry a 500 and a refused connection with back-off: seconds.
pytestmark = pytest.mark.slow
CALLS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(keep_alive=False) as server:
        yield server


def failure_of(provider: str, env: dict[str, str], script: str) -> str:
    model = f"{provider}:scripted"
    chat = create_models([model], env)[model]
    if provider != "ollama":
        chat = chat.with_retry(stop_after_attempt=1)
    with pytest.raises(Exception, match=r"(?i)error|connect|broke|refused") as raised:
        chat.invoke(script)
    failure = model_failure(raised.value, [model])
    assert failure is not None, repr(raised.value)
    message = str(failure)
    assert KEY not in message
    return message


def keyed(env: dict[str, str]) -> dict[str, str]:
    return {name: KEY if name.endswith("_API_KEY") else value for name, value in env.items()}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_providers_error_names_provider_url_and_status(
    model_server: ScriptedModelServer, provider: str
) -> None:
    env = keyed(model_server.env_for(provider))
    said = failure_of(provider, env, "@fail 500 the provider broke")
    calls = f"{model_server.url}{CALLS[provider]}"
    assert said.startswith(f"the {provider} model provider at {calls} answered 500")
    assert said.endswith(
        f"the provider's own failure: retry later (or set {ENDPOINT[provider]} to another endpoint)"
    )


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_refused_key_names_the_keys_variable_and_not_the_key(
    model_server: ScriptedModelServer, provider: str
) -> None:
    env = keyed(model_server.env_for(provider))
    said = failure_of(provider, env, f"@fail 401 Incorrect API key provided: {KEY}")
    assert "answered 401: Incorrect API key provided: ***" in said
    assert said.endswith(
        f"check {provider.upper()}_API_KEY: the key is wrong, expired or lacks access"
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_endpoint_out_of_reach_names_the_url_and_its_variable(
    model_server: ScriptedModelServer, provider: str
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    env = {
        name: (closed + ("/v1" if provider == "openai" else "")) if "KEY" not in name else KEY
        for name in model_server.env_for(provider)
    }
    said = failure_of(provider, env, "hi")
    assert said == (
        f"could not reach the {provider} model provider at {closed}{CALLS[provider]} "
        f"(connection refused) — check {ENDPOINT[provider]} and that this machine can reach it"
    )


def test_a_failure_that_is_not_the_models_is_left_alone() -> None:
    """A tool's own connection error (here: the test's) names no model provider."""
    with pytest.raises(httpx.ConnectError) as raised:
        httpx.get(f"http://127.0.0.1:{free_port()}/mcp")
    assert model_failure(raised.value, ["openai:gpt-4o"]) is None
    assert model_failure(ValueError("bad tool input"), ["openai:gpt-4o"]) is None
