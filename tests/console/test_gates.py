"""Approval gates in the console: a run paused at a gated tool shows the call and its
arguments; approve, edit (the arguments, as JSON) and reject resume it — and the thread's
state on the server says what ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from playwright.async_api import expect

from tests.console.conftest import Console, DevUrl, OpenConsole, expect_file_shown, write_call
from tests.server.conftest import write_gated

WRITE = write_call("/notes.md", "hello") + "\n@say {last_tool_result}"


async def files_of(url: str, thread_id: str) -> dict[str, Any]:
    async with get_client(url=url, api_key=None) as client:
        state = await client.threads.get_state(thread_id)
    values = state["values"]
    assert isinstance(values, dict), values
    files = values.get("files") or {}
    assert isinstance(files, dict), files
    return files


async def pause_at_the_gate(console: Console) -> Any:
    """Send the gated write; the gate that shows, once the run waits."""
    await console.open()
    await console.send(WRITE)
    gate = console.page.get_by_role("region", name="Approval needed")
    await expect(gate).to_contain_text("write_file waits for approval")
    await expect(gate.get_by_label("Arguments of write_file")).to_contain_text(
        '"file_path": "/notes.md"'
    )
    await console.wait_idle()
    return gate


async def test_approve_runs_the_call(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(write_gated(tmp_path / "gated"))
    async with open_console(url) as console:
        page = console.page
        gate = await pause_at_the_gate(console)
        for decision in ("Approve", "Edit", "Reject"):
            await expect(gate.get_by_role("button", name=decision)).to_be_enabled()
        thread_id = await console.thread_id()
        assert await files_of(url, thread_id) == {}
        await expect(page.get_by_role("button", name="Tool write_file")).to_contain_text(
            "waiting for approval"
        )
        await console.screenshot("gate")

        # The gate is the thread's: a reload finds it waiting still.
        await page.reload()
        await expect(gate.get_by_label("Arguments of write_file")).to_contain_text("/notes.md")

        await gate.get_by_role("button", name="Approve").click()
        await expect(page.locator(".message.ai").last).to_have_text("Updated file /notes.md")
        await console.wait_idle()
        await expect(gate).to_have_count(0)
        await expect_file_shown(page, "/notes.md", "hello")
        assert set(await files_of(url, thread_id)) == {"/notes.md"}
        await console.screenshot("gate-approved")


async def test_edit_runs_the_call_with_the_edited_arguments(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(write_gated(tmp_path / "gated"))
    async with open_console(url) as console:
        page = console.page
        gate = await pause_at_the_gate(console)
        await gate.get_by_role("button", name="Edit").click()
        editor = gate.get_by_role("form", name="Edit write_file")
        arguments = editor.get_by_label("Arguments (JSON)")
        shown = json.dumps({"file_path": "/notes.md", "content": "hello"}, indent=2)
        await expect(arguments).to_have_value(shown)
        await expect(arguments).to_be_focused()  # the opened form takes the keyboard

        # Text that is not a JSON object is refused, plainly, and nothing runs.
        await arguments.fill('{"file_path": "/edited.md",')
        await editor.get_by_role("button", name="Run with these arguments").click()
        await expect(editor.get_by_role("alert")).to_contain_text("not valid JSON")
        await expect(arguments).to_have_attribute("aria-invalid", "true")
        await console.screenshot("gate-edit-invalid")
        await arguments.fill('["not", "an", "object"]')
        await editor.get_by_role("button", name="Run with these arguments").click()
        await expect(editor.get_by_role("alert")).to_contain_text("must be a JSON object")

        await arguments.fill('{"file_path": "/edited.md", "content": "edited by a person"}')
        await console.screenshot("gate-edit")
        await editor.get_by_role("button", name="Run with these arguments").click()
        await expect(page.locator(".message.ai").last).to_contain_text("Updated file /edited.md")
        await console.wait_idle()
        files = await files_of(url, await console.thread_id())
        assert set(files) == {"/edited.md"}
        content = files["/edited.md"]["content"]
        text = "\n".join(content) if isinstance(content, list) else content
        assert text == "edited by a person"
        # The call keeps the model's arguments; its result says what ran instead.
        await page.get_by_role("button", name="Tool write_file").click()
        call = page.get_by_test_id("tool-call")
        await expect(call).to_contain_text('"file_path": "/notes.md"')
        ran = 'Executed instead: write_file with arguments {"file_path": "/edited.md"'
        await expect(call).to_contain_text(ran)
        await console.screenshot("gate-edited")


def gate_without_edit(root: Path) -> Path:
    write_gated(root)
    toml = (root / "agent.toml").read_text()
    allowed = 'write_file = { allowed_decisions = ["approve", "reject"] }'
    (root / "agent.toml").write_text(toml.replace("write_file = true", allowed))
    return root


async def test_reject_skips_the_call_and_the_agent_goes_on(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(gate_without_edit(tmp_path / "gated"))
    async with open_console(url) as console:
        page = console.page
        gate = await pause_at_the_gate(console)
        # Only the decisions the gate allows are offered.
        await expect(gate.get_by_role("button", name="Edit")).to_have_count(0)
        await gate.get_by_role("button", name="Reject").click()
        form = gate.get_by_role("form", name="Reject write_file")
        message = form.get_by_label("Message to the agent (optional)")
        await expect(message).to_be_focused()
        # Cancel closes the form and gives the focus back to its button.
        await form.get_by_role("button", name="Cancel").click()
        await expect(gate.get_by_role("button", name="Reject")).to_be_focused()
        await gate.get_by_role("button", name="Reject").click()
        await message.fill("not in this folder")
        await console.screenshot("gate-reject")
        await form.get_by_role("button", name="Reject the call").click()

        await expect(page.locator(".message.ai").last).to_contain_text("not in this folder")
        await console.wait_idle()
        assert await files_of(url, await console.thread_id()) == {}
        await expect(page.get_by_role("region", name="Files")).to_have_count(0)

        # The conversation goes on after the rejection.
        await console.send("@say fine, I will not write it")
        await expect(page.locator(".message.ai").last).to_have_text("fine, I will not write it")


async def test_two_calls_at_one_gate_take_a_decision_each(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(write_gated(tmp_path / "gated"))
    both = write_call("/a.md", "a") + " && " + write_call("/b.md", "b")
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(both + "\n@say two decisions taken")
        actions = page.get_by_test_id("gate-action")
        await expect(actions).to_have_count(2)
        await console.wait_idle()
        await actions.nth(0).get_by_role("button", name="Approve").click()
        # One decision is not enough: the run waits for the other.
        await expect(actions.nth(0)).to_contain_text("Decision: approve")
        await expect(page.get_by_test_id("status")).to_have_attribute("data-loading", "false")
        await actions.nth(1).get_by_role("button", name="Reject").click()
        await actions.nth(1).get_by_role("button", name="Reject the call").click()
        await expect(page.locator(".message.ai").last).to_have_text("two decisions taken")
        await console.wait_idle()
        assert set(await files_of(url, await console.thread_id())) == {"/a.md"}


async def test_the_card_shows_the_arguments_once_and_a_rejected_call_says_rejected(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(write_gated(tmp_path / "gated"))
    async with open_console(url) as console:
        page = console.page
        gate = await pause_at_the_gate(console)
        # The arguments once, as JSON: not again in the gate's default description.
        card = await gate.get_by_test_id("gate-action").inner_text()
        assert card.count("/notes.md") == 1, card
        assert "Args:" not in card, card
        await gate.get_by_role("button", name="Reject").click()
        await gate.get_by_role("button", name="Reject the call").click()
        await expect(page.locator(".message.ai").last).to_contain_text(
            "User rejected the tool call"
        )
        await console.wait_idle()

        # In the chat: rejected, not failed.
        call = page.get_by_role("button", name="Tool write_file rejected")
        await expect(call).to_be_visible()
        await expect(call.locator(".tool-state")).to_have_text("rejected")
        await call.click()
        await expect(page.get_by_test_id("tool-call").locator("pre.error")).to_have_count(0)
        await console.screenshot("gate-rejected")

        # In the thread's timeline too.
        thread_id = await console.thread_id()
        await console.open(f"threads/{thread_id}")
        rejected = page.get_by_test_id("timeline").locator("li[data-type=tool]")
        await expect(rejected).to_have_count(1)
        await expect(rejected).to_have_attribute("data-rejected", "true")
        await expect(rejected.locator(".who")).to_have_text("Tool write_file rejected")
        await expect(page.get_by_test_id("state-messages")).to_contain_text(
            "Tool write_file rejected"
        )
        approval = page.get_by_test_id("timeline").locator("li[data-kind=approval]")
        await expect(approval).to_contain_text("Waited for approval")
