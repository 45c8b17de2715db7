"""The chat as people use it: Markdown rendered safely, the view following the stream, Stop
keeping the partial answer, an honest status after every outcome, the chats beside the
conversation, keyboard shortcuts, a phone's screen, and focus without a glitch."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Page, expect

from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole

CODE = "def greet(name):\n    return 'hello ' + name  # polite"
MARKDOWN = (
    "# Plan\n\nThis is **bold** and `inline`.\n\n"
    f"```python\n{CODE}\n```\n\n"
    "See [the docs](https://example.com/docs) or [this](javascript:window.hacked=1).\n\n"
    "<script>window.hacked = 2</script>\n\n"
    'Raw <img src=x onerror="window.hacked=3"> stays text.\n\n- one\n- two\n'
)


def say(text: str, slow: float | None = None) -> str:
    return ("" if slow is None else f"@slow {slow} ") + "@say " + json.dumps(text)


async def status(page: Page) -> tuple[str | None, str]:
    line = page.get_by_test_id("status")
    return await line.get_attribute("data-outcome"), await line.inner_text()


async def test_markdown_is_rendered_safely_with_copyable_code(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.context.grant_permissions(["clipboard-read", "clipboard-write"])
        await console.open()
        await console.send(say(MARKDOWN))
        answer = page.locator(".message.ai").last
        await expect(answer.get_by_role("heading", level=2, name="Plan")).to_be_visible()
        await expect(answer.locator("strong")).to_have_text("bold")
        await expect(answer.locator("p code")).to_have_text("inline")
        await expect(answer.get_by_role("listitem")).to_have_text(["one", "two"])
        code = answer.locator(".code-block code")
        await expect(code).to_have_text(CODE)
        await expect(code.locator(".hl-keyword").first).to_have_text("def")
        await expect(code.locator(".hl-comment")).to_contain_text("# polite")
        link = answer.get_by_role("link", name="the docs")
        await expect(link).to_have_attribute("href", "https://example.com/docs")
        await expect(link).to_have_attribute("target", "_blank")
        assert "noopener" in (await link.get_attribute("rel") or "")
        # The javascript: link is text, raw HTML shows as the text it is, nothing ran.
        await expect(answer.get_by_role("link")).to_have_count(1)
        await expect(answer).to_contain_text("this")
        await expect(answer).to_contain_text("<script>window.hacked = 2</script>")
        await expect(answer).to_contain_text('<img src=x onerror="window.hacked=3">')
        await expect(answer.locator("script, img")).to_have_count(0)
        assert await page.evaluate("window.hacked") is None
        await console.wait_idle()

        copy = answer.get_by_role("button", name="Copy python code")
        await copy.click()
        await expect(answer.get_by_role("button", name="Copied")).to_be_visible()
        assert await page.evaluate("navigator.clipboard.readText()") == CODE
        await console.screenshot("chat-markdown")


async def test_the_view_follows_the_stream_unless_the_reader_scrolled_up(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    lines = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(1, 61))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(say(lines, slow=0.04))
        answer = page.locator(".message.ai").last
        await expect(answer).to_contain_text("Paragraph 25")
        assert await at_bottom(page), "the view did not follow the stream"
        jump = page.get_by_role("button", name="Jump to latest")
        await expect(jump).to_have_count(0)

        await page.mouse.wheel(0, -4000)
        await expect(jump).to_be_visible()
        top = await page.evaluate("window.scrollY")
        await expect(answer).to_contain_text("Paragraph 45")
        assert await page.evaluate("window.scrollY") == top, "the view moved while read"
        await jump.click()
        assert await at_bottom(page)
        await expect(jump).to_have_count(0)
        await expect(answer).to_contain_text("Paragraph 60")
        await console.wait_idle()
        assert await at_bottom(page)


async def at_bottom(page: Page) -> bool:
    return bool(
        await page.evaluate(
            "window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 60"
        )
    )


WORDS = " ".join(f"word{n}" for n in range(1, 41))


async def test_stop_keeps_the_partial_answer_and_says_it_was_stopped(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(f"@slow 0.25 @say {WORDS}")
        await expect(page.locator(".message.ai").last).to_contain_text("word3")
        await page.get_by_role("button", name="Stop").click()
        await console.wait_idle()
        stopped = page.locator(".message.stopped")
        await expect(stopped).to_contain_text("word1 word2 word3")
        await expect(stopped).to_contain_text("Stopped: the answer is incomplete.")
        assert "word40" not in await stopped.inner_text()
        outcome, text = await status(page)
        assert outcome == "stopped", text
        assert "stopped" in text, text
        assert "answered" not in text, text
        await console.screenshot("chat-stopped")

        # The next turn keeps the stopped answer in view and answers honestly.
        await console.send("@say and now in full")
        await expect(page.locator(".message.ai").last).to_have_text("and now in full")
        await console.wait_idle()
        await expect(stopped).to_have_count(1)
        outcome, text = await status(page)
        assert outcome == "answered", text
        assert text.startswith("The agent answered."), text


async def test_a_failed_run_says_it_failed_never_that_the_agent_answered(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send("@say first")
        await console.wait_idle()
        await console.send("@fail 500 the model is down")
        await expect(page.get_by_role("alert")).to_contain_text("the model is down")
        await console.wait_idle()
        outcome, text = await status(page)
        assert outcome == "failed", text
        assert "failed" in text, text
        assert "answered" not in text, text


async def test_the_chats_list_new_chat_and_search(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        chats = page.get_by_role("navigation", name="Chats")
        await console.open()
        await console.send("@say apples are red")
        await console.wait_idle()
        first = await console.thread_id()
        await chats.get_by_role("button", name="New chat").click()
        await expect(page.locator(".message")).to_have_count(0)
        assert page.url.endswith("#/chat"), page.url
        await expect(page.get_by_label("Message")).to_be_focused()
        await console.send("@say pears are green")
        await console.wait_idle()
        second = await console.thread_id()
        assert second != first

        # Titles from the first message, newest first; the open chat is marked.
        links = chats.get_by_role("link")
        await expect(links).to_have_text(["@say pears are green", "@say apples are red"])
        await expect(chats.get_by_role("link", name="@say pears are green")).to_have_attribute(
            "aria-current", "page"
        )
        await chats.get_by_label("Search chats").fill("APPLE")
        await expect(links).to_have_text(["@say apples are red"])
        await links.first.click()
        await expect(page.locator(".message.ai")).to_have_text(["apples are red"])
        assert await console.thread_id() == first
        await chats.get_by_label("Search chats").fill("kiwi")
        await expect(chats).to_contain_text("No chat matches.")


async def test_keyboard_shortcuts(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        # Discoverable: the list of shortcuts under the composer.
        await page.get_by_role("button", name="Keyboard shortcuts").click()
        shortcuts = page.locator("#shortcut-list dt")
        await expect(shortcuts).to_contain_text(["Alt+Shift+N", "/", "Enter", "Esc", "?"])

        await page.locator("body").click(position={"x": 5, "y": 300})
        await page.keyboard.press("/")
        await expect(page.get_by_label("Message")).to_be_focused()
        await page.keyboard.type(f"@slow 0.25 @say {WORDS}")
        await page.keyboard.press("Enter")
        await expect(page.locator(".message.ai").last).to_contain_text("word2")
        await page.keyboard.press("Escape")
        await console.wait_idle()
        await expect(page.locator(".message.stopped")).to_contain_text("word1 word2")

        await page.keyboard.press("Alt+Shift+N")
        await expect(page.locator(".message")).to_have_count(0)
        assert page.url.endswith("#/chat"), page.url
        await expect(page.get_by_label("Message")).to_be_focused()


async def test_a_phone_screen_has_no_horizontal_overflow_and_threads_can_be_deleted(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await page.set_viewport_size({"width": 390, "height": 844})
        await console.open()
        await console.send(say(MARKDOWN))
        await console.wait_idle()
        assert await overflow(page) <= 0, "the chat is wider than the phone"
        # The chats fold behind a button.
        chats = page.get_by_role("navigation", name="Chats")
        await expect(chats.get_by_label("Search chats")).to_be_hidden()
        await chats.get_by_role("button", name="Chats").click()
        await expect(chats.get_by_role("link")).to_have_count(1)
        await console.screenshot("chat-phone")

        await console.go("Threads")
        delete = page.get_by_role("button", name="Delete").first
        await expect(delete).to_be_visible()
        box = await delete.bounding_box()
        assert box is not None
        assert box["x"] >= 0, box
        assert box["x"] + box["width"] <= 390, box
        assert await overflow(page) <= 0, "the threads table is wider than the phone"
        await delete.click()
        await page.get_by_role("button", name="Yes").click()
        await expect(page.get_by_text("No threads found.")).to_be_visible()


async def overflow(page: Page) -> int:
    """How many pixels the page is wider than the screen."""
    return int(
        await page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )


async def test_the_heading_takes_the_focus_without_an_outline(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        for view in ("Threads", "Memory"):
            await console.go(view)
            heading = page.get_by_role("heading", level=1, name=view)
            await expect(heading).to_be_focused()
            style = await heading.evaluate("(h) => getComputedStyle(h).outlineStyle")
            assert style == "none", style
        # From the keyboard too.
        nav = page.get_by_role("navigation", name="Console")
        await nav.get_by_role("link", name="Threads").focus()
        await page.keyboard.press("Enter")
        heading = page.get_by_role("heading", level=1, name="Threads")
        await expect(heading).to_be_focused()
        assert await heading.evaluate("(h) => getComputedStyle(h).outlineStyle") == "none"
