"""Time travel in a thread's timeline: the agent's own steps by default and its middleware
on demand; from an earlier checkpoint a message of yours or the state is edited and the
agent runs again — a new branch, the old one still there, a switch showing each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from playwright.async_api import Locator, Page, expect

from tests.conftest import chat_project
from tests.console.conftest import Console, DevUrl, OpenConsole, write_call
from tests.server.conftest import user

AGENT_KINDS = {"input", "model", "tools", "subagent", "approval", "edit", "node", "messages"}


def checkpoints(page: Page) -> Locator:
    return page.get_by_test_id("timeline").locator("> li.checkpoint")


async def kinds(page: Page) -> list[str]:
    return [
        kind or ""
        for kind in await checkpoints(page).evaluate_all(
            "items => items.map(item => item.dataset.kind)"
        )
    ]


async def open_thread(console: Console, thread_id: str) -> None:
    await console.open(f"threads/{thread_id}")
    await expect(console.page.get_by_role("heading", name=f"Thread {thread_id}")).to_be_visible()


async def travelled(page: Page, said: str = "The new branch is shown.") -> None:
    status = page.get_by_test_id("time-travel")
    await expect(status).to_have_attribute("data-busy", "false")
    await expect(status).to_have_text(said)


async def test_the_timeline_shows_the_agents_steps_and_the_middleware_on_demand(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with get_client(url=url, api_key=None) as client:
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        note = write_call("/notes.md", "a note")
        for script in ("@say first", f"{note}\n@say wrote it", "@say third"):
            await client.runs.wait(thread_id, "chat", input=user(script))
        history = await client.threads.get_history(thread_id, limit=200)
    async with open_console(url) as console:
        page = console.page
        await open_thread(console, thread_id)
        # Newest first: each turn's message, the model and the tools — no middleware.
        shown = await kinds(page)
        assert shown == ["model", "input", "model", "tools", "model", "input", "model", "input"]
        await expect(page.locator(".cp-kind.middleware")).to_have_count(0)
        tools = checkpoints(page).filter(has=page.locator(".cp-kind.tools"))
        await expect(tools).to_contain_text("Changed: files")
        await expect(tools).to_contain_text("Tool write_file")
        toggle = page.get_by_label("Show middleware steps")
        await expect(toggle).not_to_be_checked()
        hidden = len(history) - len(shown)
        await expect(page.locator(".timeline-filter")).to_contain_text(f"({hidden} hidden)")
        await page.get_by_role("heading", name="Timeline").evaluate("h => h.scrollIntoView()")
        await console.screenshot("thread-timeline")

        # On demand, every checkpoint, the middleware's marked as such.
        await toggle.check()
        await expect(checkpoints(page)).to_have_count(len(history))
        middleware = checkpoints(page).filter(has=page.locator(".cp-kind.middleware"))
        await expect(middleware.first).to_contain_text("Middleware")
        await expect(
            middleware.filter(has_text="by PatchToolCallsMiddleware.before_agent")
        ).to_have_count(3)
        await expect(checkpoints(page).last).to_contain_text("Step -1")
        await expect(checkpoints(page).last).to_contain_text("source: input")
        assert set(await kinds(page)) - AGENT_KINDS == {"middleware"}
        await toggle.uncheck()
        await expect(checkpoints(page)).to_have_count(len(shown))


async def test_editing_an_earlier_message_runs_a_new_branch_and_both_stay(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with get_client(url=url, api_key=None) as client:
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        for script in ("@say first", "@say second", "@say third"):
            await client.runs.wait(thread_id, "chat", input=user(script))
        async with open_console(url) as console:
            page = console.page
            await open_thread(console, thread_id)
            state = page.get_by_test_id("state-messages").locator("li")
            await expect(state).to_have_count(6)

            # The second message, edited: the agent runs from the checkpoint before it.
            second = checkpoints(page).filter(
                has=page.locator("li[data-type=human]", has_text="@say second")
            )
            await expect(second).to_have_attribute("data-kind", "input")
            await second.get_by_role("button", name="Edit message “@say second”").click()
            form = second.get_by_role("form", name="Edit the message")
            field = form.get_by_label("Your message, edited")
            await expect(field).to_be_focused()
            await expect(field).to_have_value("@say second")
            await field.fill("@say second, edited")
            await form.get_by_role("button", name="Run from here").click()
            await travelled(page)

            # The new branch: the edited message, its own answer, and no third turn.
            await expect(state).to_have_count(4)
            await expect(state.nth(2)).to_have_text("You @say second, edited")
            await expect(state.nth(3)).to_have_text("Agent second, edited")
            fork = page.get_by_role("group", name="Branch 2 of 2, from step")
            await expect(fork).to_be_visible()
            await expect(page.get_by_test_id("branch")).to_have_text("the latest")
            await fork.evaluate("bar => bar.scrollIntoView({block: 'center'})")
            await console.screenshot("thread-fork")

            # The old branch is still there: switch back to it, and forth again.
            await fork.get_by_role("button", name="Previous branch").click()
            fork = page.get_by_role("group", name="Branch 1 of 2, from step")
            await expect(fork.get_by_role("button", name="Previous branch")).to_be_disabled()
            await expect(state).to_have_count(6)
            await expect(state.nth(3)).to_have_text("Agent second")
            await expect(state.nth(5)).to_have_text("Agent third")
            await expect(page.get_by_test_id("branch")).to_contain_text("an earlier one")
            await expect(
                page.get_by_role("heading", name="State at the end of this branch")
            ).to_be_visible()
            await fork.get_by_role("button", name="Next branch").click()
            await expect(state).to_have_count(4)
            await expect(state.nth(3)).to_have_text("Agent second, edited")
            await page.get_by_role("button", name="Previous branch").click()
            await expect(state).to_have_count(6)
            await page.get_by_role("button", name="Show the latest branch").click()
            await expect(state.nth(3)).to_have_text("Agent second, edited")

            # On the server: the thread's state is the new branch; both answers are in its history.
            latest = await client.threads.get_state(thread_id)
            values: Any = latest["values"]
            assert [m["content"] for m in values["messages"]][-1] == "second, edited"
            history: list[Any] = await client.threads.get_history(thread_id, limit=200)
            answers = {
                m["content"]
                for s in history
                for m in s["values"].get("messages", [])
                if m["type"] == "ai"
            }
            assert {"first", "second", "third", "second, edited"} <= answers
            # The chat goes on from the new branch.
            await page.get_by_role("link", name="Continue in chat").click()
            await expect(page.locator(".message.ai").last).to_have_text("second, edited")


async def test_editing_the_state_at_a_checkpoint_saves_a_branch_and_runs_on_from_it(
    open_console: OpenConsole, dev_url: DevUrl, tmp_path: Path
) -> None:
    url = dev_url(chat_project(tmp_path / "chat"))
    async with get_client(url=url, api_key=None) as client:
        thread = await client.threads.create()
        thread_id = thread["thread_id"]
        script = write_call("/notes.md", "a note") + "\n@say the tool said: {last_tool_result}"
        await client.runs.wait(thread_id, "chat", input=user(script))
        async with open_console(url) as console:
            page = console.page
            await open_thread(console, thread_id)
            state = page.get_by_test_id("state-messages").locator("li")
            await expect(state.last).to_have_text("Agent the tool said: Updated file /notes.md")

            # After the tool ran: its result and the file it wrote, edited, then run on.
            tools = checkpoints(page).filter(has=page.locator(".cp-kind.tools"))
            await tools.get_by_role("button", name="Edit state").click()
            form = tools.get_by_role("form", name="Edit the state")
            field = form.get_by_label("Values at this checkpoint (JSON)")
            values = json.loads(await field.input_value())
            await field.fill("{not json")
            await form.get_by_role("button", name="Save and run from here").click()
            await expect(form.get_by_role("alert")).to_contain_text("not valid JSON")
            await field.fill(json.dumps(values))
            await form.get_by_role("button", name="Save as a branch").click()
            await expect(form.get_by_role("alert")).to_have_text(
                "Nothing changed: edit a value first."
            )
            values["messages"][-1]["content"] = "the notes are elsewhere"
            values["files"]["/notes.md"]["content"] = edited_content(
                values["files"]["/notes.md"]["content"]
            )
            await field.fill(json.dumps(values, indent=2))
            await form.get_by_role("button", name="Save and run from here").click()
            await travelled(page)

            await expect(state.last).to_have_text("Agent the tool said: the notes are elsewhere")
            edit = checkpoints(page).filter(has=page.locator(".cp-kind.edit"))
            await expect(edit).to_have_count(1)
            await expect(edit).to_contain_text("Changed: files, messages")
            files = page.locator("details.json", has=page.locator("summary", has_text="files"))
            await files.locator("summary").click()
            await expect(files.locator("pre")).to_contain_text("an edited note")

            latest = await client.threads.get_state(thread_id)
            latest_values: Any = latest["values"]
            assert "an edited note" in json.dumps(latest_values["files"])
            assert (
                latest_values["messages"][-1]["content"] == "the tool said: the notes are elsewhere"
            )

            # The branch before the edit: the tool's own result and file.
            await page.get_by_role("button", name="Previous branch").click()
            await expect(state.last).to_have_text("Agent the tool said: Updated file /notes.md")
            await expect(files.locator("pre")).to_contain_text("a note")
            await expect(files.locator("pre")).not_to_contain_text("an edited note")

            # "Save as a branch" saves without running: a third branch from the same step.
            await page.get_by_role("button", name="Show the latest branch").click()
            model = checkpoints(page).filter(has=page.locator(".cp-kind.model")).first
            await model.get_by_role("button", name="Edit state").click()
            field = model.get_by_label("Values at this checkpoint (JSON)")
            values = json.loads(await field.input_value())
            values["messages"][-1]["content"] = "an answer of my own"
            await field.fill(json.dumps(values))
            await model.get_by_role("button", name="Save as a branch").click()
            await travelled(page, "Saved as a new branch.")
            await expect(state.last).to_have_text("Agent an answer of my own")
            runs = await client.runs.list(thread_id)
            assert len(runs) == 2  # the first and the run after the edit; saving ran nothing


def edited_content(content: Any) -> Any:
    if isinstance(content, list):
        return [line.replace("a note", "an edited note") for line in content]
    return str(content).replace("a note", "an edited note")
