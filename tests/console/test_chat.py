"""Chatting in the console: tokens stream in as the model sends them, and the thread is
there again after a reload."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import expect

from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole, expect_file_shown, write_call

ANSWER = "one two three four five six seven eight nine ten"


async def test_tokens_stream_in_and_the_thread_survives_a_reload(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        await console.open()
        await console.send(f"@slow 0.15 @say {ANSWER}")
        answer = console.page.locator(".message.ai").last
        # Part of the answer shows while the model is still sending the rest.
        await expect(answer).to_contain_text("one two")
        partial = await answer.inner_text()
        assert partial != ANSWER, partial
        assert ANSWER.startswith(partial), partial
        await console.screenshot("chat-streaming")
        await expect(answer).to_have_text(ANSWER)
        await console.wait_idle()
        thread_id = await console.thread_id()

        await console.page.reload()
        await expect(console.page.locator(".message.ai").last).to_have_text(ANSWER)
        await expect(console.page.locator(".message.human")).to_have_text(
            [f"@slow 0.15 @say {ANSWER}"]
        )
        assert await console.thread_id() == thread_id
        await console.screenshot("chat")


async def test_a_tool_call_shows_its_arguments_and_result_and_the_file_it_wrote(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(write_call("/notes.md", "first line\nsecond line") + "\n@say wrote it")
        await expect(page.locator(".message.ai").last).to_have_text("wrote it")
        await console.wait_idle()

        tool = page.get_by_role("button", name="Tool write_file done")
        await expect(tool).to_have_attribute("aria-expanded", "false")
        await tool.click()
        await expect(tool).to_have_attribute("aria-expanded", "true")
        details = page.get_by_test_id("tool-call")
        await expect(details).to_contain_text('"file_path": "/notes.md"')
        await expect(details).to_contain_text("Updated file /notes.md")

        await expect_file_shown(page, "/notes.md", "first line\nsecond line")
        await console.screenshot("chat-tools")

        # Collapsing hides the details again, from the keyboard too.
        await tool.focus()
        await page.keyboard.press("Enter")
        await expect(tool).to_have_attribute("aria-expanded", "false")
        await expect(details).not_to_contain_text("Updated file")


def subagent_project(root: Path) -> Path:
    chat_project(root)
    helper = root / "subagents" / "helper"
    helper.mkdir(parents=True)
    (helper / "agent.toml").write_text('[agent]\nname = "helper"\ndescription = "Helps"\n')
    (helper / "AGENTS.md").write_text("You help.\n")
    return root


async def test_a_subagent_delegation_shows_the_subagent_its_task_and_result(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(subagent_project(tmp_path / "chat"))
    task = {"description": "@say the helper found it", "subagent_type": "helper"}
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(f"@call task {json.dumps(task)}\n@say the main agent is done")
        await expect(page.locator(".message.ai").last).to_have_text("the main agent is done")
        await console.wait_idle()

        delegation = page.get_by_role("button", name="Subagent helper complete")
        await delegation.click()
        await expect(delegation).to_have_attribute("aria-expanded", "true")
        subagent = page.get_by_test_id("subagent")
        await expect(subagent).to_contain_text("Task")
        await expect(subagent).to_contain_text("@say the helper found it")
        await expect(subagent).to_contain_text("Result")
        await expect(subagent).to_contain_text("the helper found it")
        # The subagent's own messages, streamed from its namespace, show inside it.
        await expect(subagent.get_by_test_id("subagent-messages")).to_have_text(
            "the helper found it"
        )
        # A delegation is not shown as a plain tool call.
        await expect(page.get_by_test_id("tool-call")).to_have_count(0)
        await console.screenshot("chat-subagent")

        # After a reload the delegation is rebuilt from the thread: its task and result.
        await page.reload()
        await delegation.click()
        await expect(subagent).to_contain_text("@say the helper found it")
        await expect(subagent.locator("pre").last).to_have_text("the helper found it")


async def test_a_failed_run_shows_its_error_and_the_chat_goes_on(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send("@fail 500 the model is down")
        alert = page.get_by_role("alert")
        await expect(alert).to_contain_text("The run failed")
        await expect(alert).to_contain_text("the model is down")
        assert "Traceback" not in await alert.inner_text()
        await console.wait_idle()
        await console.screenshot("chat-error")
        # The thread keeps the failure: a reload shows it again.
        await page.reload()
        await expect(page.get_by_role("alert")).to_contain_text("the model is down")

        await console.send("@say back again")
        await expect(page.locator(".message.ai").last).to_have_text("back again")
        await expect(page.get_by_role("alert")).to_have_count(0)
