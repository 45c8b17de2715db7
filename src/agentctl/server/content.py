"""The text of a chat message's `content`, however its provider shaped it."""

from __future__ import annotations

from typing import Any


def text_of(content: Any) -> str:
    """A string as it is; a list of content blocks (Anthropic's, or any provider's in
    langchain's v1 format) as its text blocks joined as written, with no separator (a text
    cut by citations reads on), skipping tool calls, reasoning and the like."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block if isinstance(block, str) else str(block.get("text") or "")
        for block in content
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
    )
