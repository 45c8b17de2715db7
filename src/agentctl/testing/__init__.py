"""Offline testing helpers: a scripted, stateless model server speaking the OpenAI, Anthropic
and Ollama chat APIs.

Start it with ``with ScriptedModelServer() as server:`` and point ``langchain-openai`` at
``server.base_url`` (or any of the three providers at it with ``server.env_for(provider)``); the
script lives in the last user message (see ``docs/testing.md``).
"""

from __future__ import annotations

from agentctl.testing.script import (
    DONE_TEXT,
    PLAIN_PREFIX,
    Reply,
    ScriptError,
    ToolCall,
    decide,
    parse_script,
)
from agentctl.testing.server import (
    DEFAULT_MODEL,
    PROVIDERS,
    ScriptedModelApp,
    ScriptedModelServer,
)

__all__ = [
    "DEFAULT_MODEL",
    "DONE_TEXT",
    "PLAIN_PREFIX",
    "PROVIDERS",
    "Reply",
    "ScriptError",
    "ScriptedModelApp",
    "ScriptedModelServer",
    "ToolCall",
    "decide",
    "parse_script",
]
