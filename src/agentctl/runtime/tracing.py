"""LangSmith tracing of one runtime, from its own `LANGSMITH_*` (or `LANGCHAIN_*`) variables.

langchain traces to the account named in the process environment; a runtime whose variables
ask for tracing gets its own tracer instead, with its own key, endpoint and project, so
a revision's tracing key never enters the process environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
_TRUE = ("true", "1", "yes")


def _first(env: Mapping[str, str], name: str, default: str = "") -> str:
    return env.get(f"LANGSMITH_{name}") or env.get(f"LANGCHAIN_{name}") or default


def settings(env: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(api key, endpoint, project) when `env` turns tracing on, else None."""
    switches = (env.get(name, "") for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"))
    if not any(value.strip().lower() in _TRUE for value in switches):
        return None
    key = _first(env, "API_KEY")
    if not key:
        return None
    return key, _first(env, "ENDPOINT", DEFAULT_ENDPOINT), _first(env, "PROJECT", "default")


def tracer_callbacks(env: Mapping[str, str]) -> list[Any]:
    """A tracer for `env`'s tracing settings; none when it asks for none, or for exactly
    what the process environment already traces to (as under `agentctl dev` with the keys
    in the shell), which langchain does on its own."""
    wanted = settings(env)
    if wanted is None or wanted == settings(os.environ):
        return []
    from langchain_core.tracers.langchain import LangChainTracer
    from langsmith import Client

    key, endpoint, project = wanted
    return [LangChainTracer(project_name=project, client=Client(api_url=endpoint, api_key=key))]


async def _on_the_loop(default: Any, ctx: Any, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    return ctx.run(func, *args, **kwargs)


def keep_traced_calls_on_the_loop() -> None:
    """langchain wraps each middleware's model and tool hook in LangSmith's `traceable`,
    which by default hands the set-up and the end of every call to a thread (and runs the
    call in a task of its own), traced or not: a dozen thread hops a run. Both steps only
    build a run record and queue it for LangSmith's client, which sends from its own
    thread, so they run here inline, through LangSmith's documented runtime override."""
    import langsmith

    langsmith.set_runtime_overrides(aio_to_thread=_on_the_loop)
