"""Chatting in the console: tokens stream in as the model sends them, and the thread is
there again after a reload."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from tests.console.conftest import DevUrl, OpenConsole
from tests.js.conftest import chat_project

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
