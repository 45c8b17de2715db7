"""The Threads view: the threads a conversation left, searched, opened (state and checkpoint
timeline), kept across a reload, and deleted after a confirmation."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError
from playwright.async_api import expect

from agentctl.testing.identity import IdpBServer
from tests.conftest import chat_project
from tests.console.conftest import DevUrl, OpenConsole, memory_project
from tests.server.conftest import ALICE, BOB, user, with_auth, write_gated

NOTE = '{"file_path": "/notes.md", "content": "a note"}'


async def test_threads_are_listed_searched_opened_and_deleted(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    client = get_client(url=url, api_key=None)
    older = await client.threads.create(metadata={"topic": "older"})
    await client.runs.wait(older["thread_id"], "chat", input=user("@say an older answer"))
    async with open_console(url) as console:
        page = console.page
        await console.open()
        await console.send(f"@call write_file {NOTE}\n@say planned")
        await console.wait_idle()
        chatted = await console.thread_id()

        await console.go("Threads")
        rows = page.get_by_test_id("threads").locator("tbody tr")
        await expect(rows).to_have_count(2)
        # Most recently updated first, each titled by its first message.
        await expect(rows.nth(0)).to_have_attribute("data-thread-id", chatted)
        await expect(rows.nth(0)).to_contain_text("@call write_file")
        await expect(rows.nth(1)).to_contain_text("@say an older answer")
        await expect(rows.nth(1)).to_contain_text("idle")
        await console.screenshot("threads")

        search = page.get_by_role("search", name="Search threads")
        await search.get_by_label("Metadata").fill("topic=older")
        await search.get_by_role("button", name="Search").click()
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-thread-id", older["thread_id"])
        await search.get_by_label("Metadata").fill("")
        await search.get_by_label("Thread id").fill(chatted)
        await search.get_by_role("button", name="Search").click()
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-thread-id", chatted)
        await search.get_by_label("Thread id").fill("")
        await search.get_by_label("Status").select_option("busy")
        await search.get_by_role("button", name="Search").click()
        await expect(page.get_by_text("No threads found.")).to_be_visible()
        await search.get_by_role("button", name="Clear").click()
        await expect(rows).to_have_count(2)

        # Open the chatted thread: its state and its checkpoints, newest first.
        await rows.nth(0).get_by_role("link").click()
        await expect(page).to_have_url(f"{url}/ui/#/threads/{chatted}")
        await expect(page.get_by_role("heading", name=f"Thread {chatted}")).to_be_visible()
        state = page.get_by_test_id("state-messages").locator("li")
        await expect(state).to_have_count(4)
        await expect(state.nth(1)).to_contain_text('write_file({"file_path":"/notes.md"')
        await expect(state.nth(2)).to_have_attribute("data-type", "tool")
        await expect(state.nth(2)).to_contain_text("Tool write_file")
        await expect(state.nth(3)).to_have_text("Agent planned")
        await console.screenshot("thread")
        files = page.locator("details.json", has=page.locator("summary", has_text="files"))
        await files.locator("summary").click()
        await expect(files.locator("pre")).to_contain_text("a note")
        checkpoints = page.get_by_test_id("timeline").locator("> li")
        history = await client.threads.get_history(chatted, limit=50)
        await page.get_by_label("Show middleware steps").check()  # every checkpoint
        await expect(checkpoints).to_have_count(len(history))
        newest = history[0]["metadata"]
        assert newest is not None
        await expect(checkpoints.first).to_contain_text(f"Step {newest['step']}")
        await expect(checkpoints.last).to_contain_text("Step -1")
        await expect(checkpoints.last).to_contain_text("input")
        # What each step changed: the answer added by one, the file written by another.
        answered = checkpoints.filter(has=page.locator("li[data-type=ai]", has_text="planned"))
        await expect(answered).to_have_count(1)
        await expect(answered).to_contain_text("1 message added")
        wrote = checkpoints.filter(has=page.locator("li[data-type=tool]"))
        await expect(wrote).to_contain_text("Changed: files")
        await wrote.get_by_text("Values at this checkpoint").click()
        await expect(wrote.locator("pre")).to_contain_text('"/notes.md"')
        await expect(page.get_by_role("link", name="Continue in chat")).to_have_attribute(
            "href", f"#/chat/{chatted}"
        )

        # A reload comes back to the same thread.
        await page.reload()
        await expect(page.get_by_role("heading", name=f"Thread {chatted}")).to_be_visible()
        await expect(state).to_have_count(4)

        # Delete, from the keyboard: "Delete", then "No" keeps it, then "Yes" deletes it.
        delete = page.get_by_role("button", name=f"Delete thread {chatted}")
        await delete.focus()
        await page.keyboard.press("Enter")
        question = page.get_by_role("group", name=f"Delete thread {chatted}?")
        await expect(question.get_by_role("button", name="No")).to_be_focused()
        await console.screenshot("thread-delete")
        await page.keyboard.press("Enter")
        await expect(delete).to_be_focused()
        await page.keyboard.press("Enter")
        await question.get_by_role("button", name="Yes").focus()
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(f"{url}/ui/#/threads")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-thread-id", older["thread_id"])
        with pytest.raises(NotFoundError):
            await client.threads.get(chatted)

        # Deleting from the list: the row goes.
        await rows.first.get_by_role("button", name="Delete").click()
        await rows.first.get_by_role("button", name="Yes").click()
        await expect(page.get_by_text("No threads found.")).to_be_visible()
        assert await client.threads.search() == []
    await client.http.client.aclose()


async def test_more_pages_in_the_next_threads(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    client = get_client(url=url, api_key=None)
    made = [await client.threads.create() for _ in range(23)]
    async with open_console(url) as console:
        await console.open("threads")
        rows = console.page.get_by_test_id("threads").locator("tbody tr")
        await expect(rows).to_have_count(20)
        await expect(rows.first).to_have_attribute("data-thread-id", made[-1]["thread_id"])
        await expect(rows.first).to_contain_text("(no message yet)")
        await console.page.get_by_role("button", name="More").click()
        await expect(rows).to_have_count(23)
        await expect(rows.last).to_have_attribute("data-thread-id", made[0]["thread_id"])
        await expect(console.page.get_by_role("button", name="More")).to_have_count(0)

        await console.open(f"threads/{'0' * 8}-0000-4000-8000-{'0' * 12}")
        await expect(console.page.get_by_test_id("thread-error")).to_have_text(
            f"Thread {'0' * 8}-0000-4000-8000-{'0' * 12} not found."
        )
    await client.http.client.aclose()


async def test_two_users_never_see_each_others_threads(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path, idp_b: IdpBServer
) -> None:
    project = memory_project(tmp_path / "source")
    url = dev_url(with_auth(project, tmp_path / "signed-in", {"provider": "idp_b"}, idp_b.env))
    threads: dict[str, str] = {}
    async with open_console(url) as alice, open_console(url) as bob:
        for name, console in ((ALICE, alice), (BOB, bob)):
            await console.open()
            await console.sign_in(idp_b.mint(name, expires_in=3600))
            await console.send(f"@say hello from {name}")
            await console.wait_idle()
            threads[name] = await console.thread_id()

        for name, console, other in ((ALICE, alice, BOB), (BOB, bob, ALICE)):
            await console.go("Threads")
            rows = console.page.get_by_test_id("threads").locator("tbody tr")
            await expect(rows).to_have_count(1)
            await expect(rows.first).to_have_attribute("data-thread-id", threads[name])
            await expect(rows.first).to_contain_text(f"@say hello from {name}")
            await console.screenshot(f"threads-{name.split('@')[0]}")
            # The other's thread, by its address: plainly not found.
            await console.open(f"threads/{threads[other]}")
            await expect(console.page.get_by_test_id("thread-error")).to_have_text(
                f"Thread {threads[other]} not found."
            )
            await expect(console.page.get_by_text(f"hello from {other}")).to_have_count(0)
            await console.screenshot(f"thread-not-found-{name.split('@')[0]}")


async def test_a_thread_waiting_at_a_gate_is_found_by_its_status(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(write_gated(tmp_path / "gated"))
    client = get_client(url=url, api_key=None)
    waiting = await client.threads.create()
    await client.runs.wait(waiting["thread_id"], "gated", input=user(f"@call write_file {NOTE}"))
    done = await client.threads.create()
    await client.runs.wait(done["thread_id"], "gated", input=user("@say nothing to approve"))
    async with open_console(url) as console:
        page = console.page
        await console.open("threads")
        rows = page.get_by_test_id("threads").locator("tbody tr")
        await expect(rows).to_have_count(2)
        search = page.get_by_role("search", name="Search threads")
        await search.get_by_label("Status").select_option("interrupted")
        await search.get_by_role("button", name="Search").click()
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_have_attribute("data-thread-id", waiting["thread_id"])
        await rows.first.get_by_role("link").click()
        await expect(page.get_by_test_id("thread-status")).to_have_text("interrupted")
        await expect(page.get_by_text("The agent waits at an approval gate")).to_be_visible()
        await expect(page.locator(".facts")).to_contain_text("Next")
    await client.http.client.aclose()
