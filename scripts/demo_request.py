"""`make demo`'s sample request: `python scripts/demo_request.py URL AGENT TOKEN`.

One conversation as the user whose bearer token is TOKEN, through the official langgraph-sdk
client: the scripted model delegates to the researcher subagent, calls write_file, which the
approval gate pauses until this script approves it, then records a preference in the user's
memory. Each step is printed as it shows in the web console.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langgraph_sdk import get_sync_client

# The scripted model plays one @ line per model call (docs/testing.md, "The script language").
RESEARCH = (
    "Find one fact about deep agents.\n"
    "@say Deep agents plan their work, delegate to subagents and keep files and memory."
)
SCRIPT = "\n".join(
    [
        "Research deep agents, save a note, and remember that I like short answers.",
        "@call task " + json.dumps({"subagent_type": "researcher", "description": RESEARCH}),
        "@call write_file "
        + json.dumps(
            {"file_path": "/notes.md", "content": "# Deep agents\nThey plan and delegate.\n"}
        ),
        "@call edit_file "
        + json.dumps(
            {
                "file_path": "/memories/user/AGENTS.md",
                "old_string": "## Preferences\n",
                "new_string": "## Preferences\n- Likes short answers.\n",
            }
        ),
        "@say Done: the researcher answered, /notes.md is saved, and I will keep my answers short.",
    ]
)
APPROVE = {"decisions": [{"type": "approve"}]}


def describe(tool: str, args: dict[str, Any]) -> str:
    """What a tool call is about, in a few words."""
    if tool == "task":
        return f"subagent {args.get('subagent_type')}"
    if tool in ("write_file", "edit_file"):
        memory = " (memory)" if str(args.get("file_path")).startswith("/memories/user/") else ""
        return f"{args.get('file_path')}{memory}"
    return json.dumps(args)


def show_tools(messages: list[dict[str, Any]]) -> None:
    """Print each tool call of `messages` with the start of its result."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("type") == "tool"}
    for message in messages:
        for call in message.get("tool_calls") or []:
            what = describe(call["name"], call["args"])
            result = results.get(call["id"], {}).get("content", "(no result)")
            print(f"  {call['name']}: {what} -> {str(result).splitlines()[0][:100]}")


def memory_of(client: Any, agent: str) -> str:
    """The signed-in user's memory file as the store holds it ("" without one)."""
    found = client.store.search_items(["users"], limit=100)
    for item in found["items"]:
        if item["namespace"][2:] == ["memories", agent, "files"] and item["key"] == "/AGENTS.md":
            content = item["value"].get("content", "")
            return "\n".join(content) if isinstance(content, list) else str(content)
    return ""


def main() -> None:
    url, agent, token = sys.argv[1:]
    headers = {"Authorization": f"Bearer {token}"}
    with get_sync_client(url=url, api_key=None, headers=headers) as client:
        thread = client.threads.create()["thread_id"]
        request: dict[str, Any] = {"messages": [{"role": "user", "content": SCRIPT}]}
        print(f"> client.runs.wait({thread[:8]}…, {agent!r}, input=<the script below>)")
        print("  " + SCRIPT.replace("\n", "\n  "))
        result: Any = client.runs.wait(thread, agent, input=request)
        for interrupt in result.get("__interrupt__") or []:
            gate = interrupt["value"]
            for action, review in zip(
                gate["action_requests"], gate["review_configs"], strict=False
            ):
                allowed = ", ".join(review["allowed_decisions"])
                print(
                    f"< paused at the approval gate: {action['name']} "
                    f"{json.dumps(action['args'])[:72]}… (allowed: {allowed})"
                )
            print(f"> client.runs.wait(…, command={{'resume': {APPROVE}}})  # approve it")
            result = client.runs.wait(thread, agent, command={"resume": APPROVE})
        show_tools(result["messages"])
        print("<", result["messages"][-1]["content"])
        memory = memory_of(client, agent)
        if memory:
            print("  the user's memory (/memories/user/AGENTS.md), as the console shows it:")
            for line in memory.strip().splitlines():
                print(f"    {line}".rstrip())


if __name__ == "__main__":
    main()
