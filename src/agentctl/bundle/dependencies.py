"""The one dependency table: what a project needs installed and what it needs set.

Model provider prefixes, MCP, sandbox providers and auth providers each map to the package a
revision requires (a pip requirement and the module that proves it is installed) and the
environment variables it requires. Both the bundle's manifest and `deploy`'s checks read
this table, and nothing else decides either.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Package:
    requirement: str  # what `pip install` takes, e.g. "langchain-openai>=1.7,<2"
    module: str  # what `import` takes, e.g. "langchain_openai"

    @property
    def name(self) -> str:
        return self.requirement.split(">")[0].split("<")[0].split("=")[0].split("[")[0]

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


@dataclass(frozen=True)
class Needs:
    """What one feature needs: packages to install and environment variables to set, and
    the variables it reads when set (`optional`, e.g. an endpoint that has a default)."""

    packages: tuple[Package, ...] = ()
    env: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


def _needs(
    requirement: str | None = None, module: str = "", *env: str, optional: tuple[str, ...] = ()
) -> Needs:
    packages = (Package(requirement, module),) if requirement else ()
    return Needs(packages, env, optional)


# LangSmith tracing, read by langchain wherever the agent runs (LANGCHAIN_* are the old
# names): every revision sends them when set, as `agentctl dev` reads them from .env.
TRACING = tuple(
    f"{prefix}_{name}"
    for prefix in ("LANGSMITH", "LANGCHAIN")
    for name in ("API_KEY", "TRACING", "TRACING_V2", "PROJECT", "ENDPOINT")
)

_OPENAI = ("langchain-openai>=1.7,<2", "langchain_openai")
_AWS = ("langchain-aws>=1.9,<2", "langchain_aws")
_AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
_AWS_OPTIONAL = ("AWS_SESSION_TOKEN",)

MODEL_PROVIDERS: dict[str, Needs] = {
    "openai": _needs(*_OPENAI, "OPENAI_API_KEY", optional=("OPENAI_BASE_URL",)),
    "azure_openai": _needs(
        *_OPENAI, "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"
    ),
    "anthropic": _needs(
        "langchain-anthropic>=1.7,<2",
        "langchain_anthropic",
        "ANTHROPIC_API_KEY",
        optional=("ANTHROPIC_BASE_URL",),
    ),
    "google_genai": _needs(
        "langchain-google-genai>=4.4,<5", "langchain_google_genai", "GOOGLE_API_KEY"
    ),
    "google_vertexai": _needs(
        "langchain-google-vertexai>=3.2,<4",
        "langchain_google_vertexai",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ),
    "bedrock": _needs(*_AWS, *_AWS_ENV, optional=_AWS_OPTIONAL),
    "bedrock_converse": _needs(*_AWS, *_AWS_ENV, optional=_AWS_OPTIONAL),
    "anthropic_bedrock": _needs(*_AWS, *_AWS_ENV, optional=_AWS_OPTIONAL),
    "mistralai": _needs("langchain-mistralai>=1.1,<2", "langchain_mistralai", "MISTRAL_API_KEY"),
    "groq": _needs("langchain-groq>=1.1,<2", "langchain_groq", "GROQ_API_KEY"),
    "fireworks": _needs("langchain-fireworks>=1.7,<2", "langchain_fireworks", "FIREWORKS_API_KEY"),
    "together": _needs("langchain-together>=0.4,<1", "langchain_together", "TOGETHER_API_KEY"),
    "cohere": _needs("langchain-cohere>=0.6,<1", "langchain_cohere", "COHERE_API_KEY"),
    "ollama": _needs(
        "langchain-ollama>=1.1,<2",
        "langchain_ollama",
        optional=("OLLAMA_BASE_URL", "OLLAMA_HOST"),
    ),
    "deepseek": _needs(
        "langchain-deepseek>=1.1,<2",
        "langchain_deepseek",
        "DEEPSEEK_API_KEY",
        optional=("DEEPSEEK_API_BASE",),
    ),
    "xai": _needs("langchain-xai>=1.3,<2", "langchain_xai", "XAI_API_KEY"),
    "perplexity": _needs("langchain-perplexity>=1.4,<2", "langchain_perplexity", "PPLX_API_KEY"),
    "huggingface": _needs(
        "langchain-huggingface>=1.2,<2", "langchain_huggingface", "HUGGINGFACEHUB_API_TOKEN"
    ),
}

MCP = _needs("langchain-mcp-adapters>=0.3,<0.4", "langchain_mcp_adapters")

SANDBOX_PROVIDERS: dict[str, Needs] = {
    "none": Needs(),
    "sandbox_a": _needs("langchain-daytona>=0.0.9,<0.1", "langchain_daytona", "DAYTONA_API_KEY"),
    "sandbox_b": _needs(
        "langchain-modal>=0.0.7,<0.1", "langchain_modal", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"
    ),
    "sandbox_c": _needs("langchain-runloop>=0.0.7,<0.1", "langchain_runloop", "RUNLOOP_API_KEY"),
    "platform_sandbox": _needs(None, "", "PLATFORM_API_KEY"),
}

AUTH_PROVIDERS: dict[str, Needs] = {
    "idp_a": _needs(None, "", "IDP_A_URL", "IDP_A_PUBLISHABLE_DEFAULT_KEY"),
    "idp_b": _needs(None, "", "IDP_B_SECRET_KEY", optional=("IDP_B_API_URL",)),
    "oidc": _needs(None, ""),  # configured by [auth].issuer and .audience, no secret
}

PLATFORM_API_KEY = "PLATFORM_API_KEY"
PLATFORM_URL = "PLATFORM_URL"


def model_provider(model: str) -> str:
    return model.split(":", 1)[0]
